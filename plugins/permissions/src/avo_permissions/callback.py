"""Build the runtime's ``approval_callback`` from a permission policy and rules.

Approval is one seam: this only builds a callback, which answers each call
with an :class:`avo.approval.Approval` — allow, deny, or ask a person — carrying
the rule and reason the runtime records on TOOL_APPROVED / TOOL_DENIED. Each
call is decided by the :class:`~avo_permissions.rules.RuleSet` (sensitive
paths, deny, ask, allow, then the mode). "Ask" makes the runtime pause durably
(HUMAN_INPUT_REQUESTED); a ``prompter`` given here answers such pauses right
away (see :attr:`PermissionCallback.answerer`). The callback also keeps a log
of every decision, with the rule that made it.

Plan mode's "a plan was submitted" is remembered per run (the kernel says
which run a call belongs to, :func:`avo.approval.deciding_run_id`) and is
rebuilt from the run's log when a run is resumed (``restore_run``): a
``submit_plan`` the log shows approved counts, in whichever process resumes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import queue
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from avo.approval import (
    Answer,
    Answerer,
    Approval,
    HumanRequest,
    RequestKind,
    deciding_run_id,
)
from avo.events import AgentEvent, EventType
from avo.models import ToolCall, ToolMetadata, ToolRisk
from avo_permissions.modes import (
    PLAN_TOOL_NAME,
    Decision,
    PermissionMode,
    PermissionPolicy,
    permission_policy_from_env,
)
from avo_permissions.rules import PermissionDecision, RuleSet

Prompter = Callable[[ToolCall], bool | Awaitable[bool | None] | None]


class InteractivePrompter:
    """Ask on a terminal: ``Approve {name}({args})? [y/N]: `` — only y/yes approves.

    The question goes to stderr (stdout carries the run's answer). End of input
    (no terminal, closed stdin) is no answer at all (None): the run stays paused
    for someone else to answer; it never proceeds on silence. Inside a running
    event loop the answer is awaited without blocking the loop (one reader
    thread per input stream, shared by every prompt), so Ctrl-C at the prompt
    leaves the run paused (resumable), and a prompt withdrawn because the pause
    was answered elsewhere (another shell) takes no line from the next prompt;
    it is told what happened (:meth:`notice`). (``avo run`` uses the kernel's
    own terminal answerer, which also takes a denial reason; this one suits
    scripts and tests.)
    """

    def __init__(self, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin
        self.stdout = stdout

    def __call__(self, call: ToolCall) -> bool | Awaitable[bool | None] | None:
        out = self.stdout or sys.stderr
        args = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
        out.write(f"Approve {call.name}({args})? [y/N]: ")
        out.flush()
        lines = _lines_of(self.stdin or sys.stdin)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _yes(lines.wait())
        return _read(lines)

    def notice(self, text: str) -> None:
        """Say what happened to the pause this prompt asked about (answered elsewhere)."""
        out = self.stdout or sys.stderr
        out.write(f"\navo: {text}\n")
        out.flush()


def _yes(answer: str) -> bool | None:
    if not answer:  # end of input: nobody here to answer
        return None
    return answer.strip().lower() in {"y", "yes"}


class _Lines:
    """One daemon thread reading a stream's lines into a queue for whichever prompt asks."""

    POLL = 0.05

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._run, name="avo-approval-prompt", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                line = self.stream.readline()
            except (OSError, ValueError):  # stdin closed under us: no answer
                line = ""
            self.queue.put(line)
            if not line:
                return

    def _took(self, line: str) -> str:
        if not line:
            self.queue.put(line)  # the end stays the end for every later prompt
        return line

    def wait(self) -> str:
        """The next line, blocking ("" at the end of input)."""
        return self._took(self.queue.get())

    async def next(self) -> str:
        """The next line without blocking the loop; a cancelled wait takes no line."""
        while True:
            try:
                return self._took(self.queue.get_nowait())
            except queue.Empty:
                await asyncio.sleep(self.POLL)


_STREAMS: dict[int, _Lines] = {}
_STREAMS_LOCK = threading.Lock()


def _lines_of(stream: TextIO) -> _Lines:
    with _STREAMS_LOCK:
        lines = _STREAMS.get(id(stream))
        if lines is None or lines.stream is not stream:
            lines = _STREAMS[id(stream)] = _Lines(stream)
        return lines


async def _read(lines: _Lines) -> bool | None:
    return _yes(await lines.next())


@dataclass(frozen=True)
class ApprovalRecord:
    """One decision the callback made."""

    tool_call_id: str
    tool_name: str
    risk: ToolRisk
    decision: Decision
    approved: bool
    rule: str = ""
    reason: str = ""
    source: str = "mode"


@dataclass
class PermissionCallback:
    """The approval callback a permission mode builds. Call it with a ToolCall."""

    policy: PermissionPolicy
    tools: dict[str, ToolMetadata]
    prompter: Prompter | None = None
    rules: RuleSet = field(default_factory=RuleSet)
    plan_submitted: bool = False
    """The plan flag of calls decided outside a run (a direct call); runs use ``plans``."""
    records: list[ApprovalRecord] = field(default_factory=list)
    plans: set[str] = field(default_factory=set)
    """The runs whose plan was submitted (plan mode), by run id."""

    @property
    def risks(self) -> dict[str, ToolRisk]:
        """Each known tool's effective risk, by name."""
        return {name: meta.effective_risk for name, meta in self.tools.items()}

    def risk_of(self, name: str) -> ToolRisk:
        """The tool's declared risk; EXECUTE for tools it was not told about."""
        metadata = self.tools.get(name)
        return metadata.effective_risk if metadata is not None else ToolRisk.EXECUTE

    def learn_tools(self, tools: Iterable[ToolMetadata | Any]) -> None:
        """Take in tools added after the callback was built (a run's bundles: MCP, skills).

        Called by the runtime when bundles set up a run, so their declared risks
        apply instead of the EXECUTE assumed for unknown tools.
        """
        self.tools.update(_metadata(tools))

    def restore_run(self, run_id: str, events: Iterable[AgentEvent]) -> None:
        """Rebuild what this callback remembers about ``run_id`` from its stored log.

        Called by ``AgentRuntime.resume`` before the run's first decision: the
        plan counts as submitted when the log holds an approved (or completed)
        ``submit_plan`` call.
        """
        kinds = (EventType.TOOL_APPROVED, EventType.TOOL_COMPLETED)
        submitted = any(
            event.event_type in kinds and event.payload.get("name") == PLAN_TOOL_NAME
            for event in events
        )
        if submitted:
            self.plans.add(run_id)
        else:
            self.plans.discard(run_id)

    def is_plan_submitted(self, run_id: str | None = None) -> bool:
        """Whether run ``run_id`` (default: the run being decided) has submitted its plan."""
        run_id = run_id or deciding_run_id()
        return self.plan_submitted if run_id is None else run_id in self.plans

    def evaluate(self, call: ToolCall) -> PermissionDecision:
        """What the rules and the mode decide about ``call`` (no prompting)."""
        return self.rules.evaluate(
            call,
            self.tools.get(call.name),
            self.policy.mode,
            plan_submitted=self.is_plan_submitted(),
            require_approval=self.policy.require_approval,
        )

    async def __call__(self, call: ToolCall) -> Approval:
        verdict = self.evaluate(call)
        approved = verdict.decision is Decision.APPROVE
        if approved and call.name == PLAN_TOOL_NAME:
            run_id = deciding_run_id()
            if run_id is None:
                self.plan_submitted = True
            else:
                self.plans.add(run_id)
        self.records.append(
            ApprovalRecord(
                call.tool_call_id,
                call.name,
                self.risk_of(call.name),
                verdict.decision,
                approved,
                rule=verdict.rule,
                reason=verdict.reason,
                source=verdict.source,
            )
        )
        if verdict.decision is Decision.APPROVE:
            return Approval.allow(verdict.reason, rule=verdict.rule)
        if verdict.decision is Decision.DENY:
            return Approval.deny(verdict.reason, rule=verdict.rule)
        return Approval.ask(verdict.reason, rule=verdict.rule)

    @property
    def answerer(self) -> Answerer | None:
        """The ``prompter`` this callback was built with, as the runtime's answerer.

        The runtime pauses durably for every "ask" first; it then asks this
        answerer (when it has no answerer of its own), so a prompter is one way
        to answer a pause, never a way around it.
        """
        prompter = self.prompter
        if prompter is None:
            return None

        return _PrompterAnswerer(prompter)


class _PrompterAnswerer:
    """A yes/no prompter as the runtime's answerer (told, through the prompter's own
    ``notice`` if it has one, when a pause it asked about was answered elsewhere)."""

    def __init__(self, prompter: Prompter) -> None:
        self.prompter = prompter

    async def __call__(self, request: HumanRequest) -> Answer | None:
        if request.kind is RequestKind.QUESTION:
            return None  # a yes/no prompter cannot answer a question
        call = ToolCall(
            tool_call_id=request.tool_call_id,
            name=request.tool_name,
            arguments=dict(request.arguments),
        )
        given = self.prompter(call)
        if inspect.isawaitable(given):
            given = await given
        if given is None:
            return None
        return Answer.approve(by="prompter") if given else Answer.deny(by="prompter")

    def notice(self, text: str) -> None:
        """Pass the runtime's word on to the prompter (if it can say it)."""
        notice = getattr(self.prompter, "notice", None)
        if callable(notice):
            notice(text)


def _metadata(tools: Iterable[Any]) -> dict[str, ToolMetadata]:
    found: dict[str, ToolMetadata] = {}
    for item in tools:
        metadata: ToolMetadata = item if isinstance(item, ToolMetadata) else item.metadata
        found[metadata.name] = metadata
    return found


def build_approval_callback(
    policy: PermissionPolicy,
    *,
    tools: Iterable[ToolMetadata | Any] = (),
    prompter: Prompter | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    rules: RuleSet | None = None,
) -> PermissionCallback:
    """The callback for ``policy``; ``tools`` (metadata or Tool objects) give the risks
    and argument kinds; ``rules`` the allow/ask/deny rules (default: none, workspace ".")."""
    return PermissionCallback(
        policy=policy,
        tools=_metadata(tools),
        prompter=prompter
        if prompter is not None or (stdin is None and stdout is None)
        else InteractivePrompter(stdin=stdin, stdout=stdout),
        rules=rules or RuleSet(),
    )


def build_mode_callback(
    mode: PermissionMode | str,
    *,
    tools: Iterable[ToolMetadata | Any] = (),
    require_approval: Iterable[str] = (),
    prompter: Prompter | None = None,
    rules: RuleSet | None = None,
) -> PermissionCallback:
    """Shorthand: a callback for ``mode``."""
    policy = PermissionPolicy(mode=PermissionMode(mode), require_approval=tuple(require_approval))
    return build_approval_callback(policy, tools=tools, prompter=prompter, rules=rules)


def approval_callback_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    tools: Iterable[ToolMetadata | Any] = (),
    prompter: Prompter | None = None,
) -> PermissionCallback:
    """The callback for ``AVO_PERMISSION_MODE`` / ``AVO_TOOLS_REQUIRE_APPROVAL``."""
    return build_approval_callback(
        permission_policy_from_env(environ), tools=tools, prompter=prompter
    )


__all__ = [
    "ApprovalRecord",
    "approval_callback_from_env",
    "InteractivePrompter",
    "PermissionCallback",
    "Prompter",
    "build_approval_callback",
    "build_mode_callback",
]
