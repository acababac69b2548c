"""``replay``: re-drive a stored run through today's code without calling providers or tools.

The run's recorded model responses (and provider failures), tool results and
approval decisions are played back to a fresh :class:`~avo.runtime.AgentRuntime`
(same run id, task, system prompt, policy and budget; an in-memory store), and
the log it writes is compared with the stored one, event by event, on the
trace :mod:`avo.ops._replay_trace` describes. When both runs finished, their
final transcripts (what the model was shown) are compared too. The report
names the first event where today's code does something else: how a user
tests an upgrade against yesterday's runs.

Nothing outside the process is touched: no provider, no tool, no hook, no
notifier; the stored run is only read. What a pre-tool hook did to a call's
arguments is played back from the log (``hook_arguments: "exact"`` on the
call's approval or request), so the replayed call is the one that ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from avo.approval import DEFAULT_DENIAL, TOOL_INPUT, Answer, Approval, tool_input
from avo.blobs import blob_store_of
from avo.compose._record import recorded_composition
from avo.events import AgentEvent, EventType
from avo.exceptions import ProviderError, RunNotFoundError
from avo.models import (
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolMetadata,
    ToolResult,
    event_id,
)
from avo.ops._replay_trace import NOT_REPLAYED, comparable, first_difference
from avo.plugins.specs import ProviderCapabilities
from avo.policies import LoopPolicy
from avo.state import RunState, StopReason, is_terminal
from avo.tools import ToolRegistry

END_OF_RECORDING = "replay reached the end of the recording"
_PROVIDER_SIDE = (EventType.ROUTE_FAILOVER, EventType.SAVER_APPLIED)
_CANCEL_ENTRIES = (EventType.RUN_CANCELLED.value, EventType.STATE_CHANGED.value)


@dataclass(frozen=True)
class Divergence:
    """Where the replay first differs from the recording."""

    position: int
    sequence: int | None
    recorded: dict[str, Any] | None
    replayed: dict[str, Any] | None
    detail: str

    def describe(self) -> str:
        """One line: the recorded event's sequence and type, and what differs."""
        where = f"event {self.sequence}" if self.sequence is not None else "after the last event"
        kind = (self.recorded or self.replayed or {}).get("type", "?")
        return f"{where} ({kind}): {self.detail}"


@dataclass
class ReplayReport:
    """The outcome of replaying one run."""

    run_id: str
    compared: int
    divergence: Divergence | None
    recorded_state: str
    replayed_state: str
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when today's code did exactly what the recording shows."""
        return self.divergence is None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``avo replay --json``)."""
        divergence = self.divergence
        return {
            "run_id": self.run_id,
            "ok": self.ok,
            "compared_events": self.compared,
            "recorded_state": self.recorded_state,
            "replayed_state": self.replayed_state,
            "divergence": None
            if divergence is None
            else {
                "sequence": divergence.sequence,
                "position": divergence.position,
                "recorded": divergence.recorded,
                "replayed": divergence.replayed,
                "detail": divergence.detail,
            },
            "notes": list(self.notes),
        }


class _Recording:
    """The provider outcomes, tool results and approvals a stored log holds, in order."""

    def __init__(self, events: list[AgentEvent]) -> None:
        from avo.ops._replay_trace import effective_events

        self.outcomes: list[tuple[list[tuple[str, dict[str, Any]]], Any]] = []
        self.results: dict[str, ToolResult] = {}
        self.approvals: dict[str, Any] = {}  # call id -> the recorded avo.approval.Approval
        self.answers: dict[tuple[str, str], dict[str, Any]] = {}  # (call id, kind) -> answer
        self.inputs: dict[str, dict[str, Any]] = {}  # call id -> the question its tool raised
        self.hook_arguments: dict[str, dict[str, Any]] = {}  # call id -> what a hook gave it
        self.hooks_masked: set[str] = set()  # calls whose hook-given arguments the log masked
        self.tools: dict[str, ToolMetadata] = {}
        self.provider: tuple[Any, Any] | None = None
        self.call_ids: list[str] = []  # the ids the runtime minted, in order
        self.steering: dict[int, list[tuple[str, str]]] = {}
        self.not_replayed: set[str] = set()
        side: list[tuple[str, dict[str, Any]]] = []
        for event in events:
            if event.event_type is EventType.HUMAN_INPUT_RECEIVED:
                key = (str(event.payload.get("tool_call_id")), str(event.payload.get("kind")))
                self.answers[key] = dict(event.payload)
        for event in effective_events(events):
            kind, payload = event.event_type, event.payload
            if kind in _PROVIDER_SIDE:
                side.append((kind.value, dict(payload)))
            elif kind is EventType.MODEL_RESPONDED:
                if self.provider is None:
                    self.provider = (payload.get("provider"), payload.get("model"))
                response = ModelResponse.model_validate(payload["response"])
                if response.tool_calls:
                    # ids the runtime minted (calls the vendor named, or repeated ones)
                    self.call_ids.extend(
                        call.tool_call_id
                        for call in response.tool_calls
                        if call.vendor_id is not None
                    )
                    response = _as_the_vendor_sent_it(response)
                self.outcomes.append((side, response))
                side = []
            elif kind is EventType.MODEL_FAILED:
                error = ProviderError(
                    str(payload.get("error") or "recorded provider failure"),
                    retryable=bool(payload.get("retryable", True)),
                )
                self.outcomes.append((side, error))
                side = []
            elif kind in (EventType.TOOL_COMPLETED, EventType.TOOL_FAILED):
                self.results[str(payload["tool_call_id"])] = ToolResult.model_validate(
                    payload["result"]
                )
            elif kind is EventType.RUN_STEERED:
                step = payload.get("step")
                if isinstance(step, int):
                    item = (str(payload.get("message", "")), str(payload.get("source", "api")))
                    self.steering.setdefault(step, []).append(item)
            elif kind.value in NOT_REPLAYED:
                self.not_replayed.add(kind.value)
            elif kind is EventType.TOOL_APPROVED:
                self.approvals.setdefault(
                    str(payload.get("tool_call_id")),
                    Approval.allow(str(payload.get("reason") or ""), rule=_rule(payload)),
                )
            elif kind is EventType.TOOL_DENIED:
                self.approvals.setdefault(
                    str(payload.get("tool_call_id")),
                    Approval.deny(
                        str(payload.get("reason") or DEFAULT_DENIAL), rule=_rule(payload)
                    ),
                )
            elif kind is EventType.HUMAN_INPUT_REQUESTED and payload.get("rule") == TOOL_INPUT:
                self.inputs[str(payload.get("tool_call_id"))] = dict(payload)  # raised mid-call
            elif kind is EventType.HUMAN_INPUT_REQUESTED:  # asked a person: ask again
                self.approvals[str(payload.get("tool_call_id"))] = Approval.ask(
                    str(payload.get("reason") or ""), rule=_rule(payload)
                )
                name = str(payload.get("name"))
                if payload.get("kind") == "question" and name in self.tools:
                    self.tools[name] = self.tools[name].model_copy(update={"asks_human": True})
            if kind in (EventType.TOOL_APPROVED, EventType.HUMAN_INPUT_REQUESTED):
                self._hook_outcome(payload)
            if kind is EventType.TOOL_REQUESTED:
                name = str(payload.get("name"))
                self.tools.setdefault(
                    name,
                    ToolMetadata(
                        name=name,
                        description=f"{name} (replayed from the recording)",
                        input_schema={"type": "object"},
                    ),
                )

    def _hook_outcome(self, payload: Mapping[str, Any]) -> None:
        """Note the arguments a pre-tool hook gave a call (recorded with its decision)."""
        call_id = str(payload.get("tool_call_id"))
        arguments = payload.get("arguments")
        if call_id in self.hook_arguments or call_id in self.hooks_masked:
            return  # the first decision's (a later event of the call repeats them)
        if payload.get("hook_arguments") == "exact" and isinstance(arguments, dict):
            self.hook_arguments[call_id] = dict(arguments)
        elif payload.get("hook_arguments") == "redacted":
            self.hooks_masked.add(call_id)

    def hooks(self) -> Any:
        """A hook registry that plays the recorded rewrites back (None: no call was rewritten).

        It stands in for the run's PRE_TOOL_USE hooks, which replay never runs: a
        call a hook rewrote gets the arguments the log recorded for it, any
        other call goes through as the model sent it.
        """
        if not self.hook_arguments:
            return None
        from avo.hooks import HookContext, HookDecision, HookEvent, HookRegistry

        def played_back(context: HookContext) -> HookDecision:
            call = context.tool_call
            given = self.hook_arguments.get(call.tool_call_id) if call is not None else None
            return HookDecision(modified_args=dict(given)) if given is not None else HookDecision()

        registry = HookRegistry()
        registry.register(HookEvent.PRE_TOOL_USE, played_back)
        return registry

    def answer(self, request: Any) -> Answer | None:
        """A person's recorded answer to ``request`` (None: nobody answered it)."""
        given = self.answers.get((request.tool_call_id, request.kind.value))
        if given is None:
            return None
        by = given.get("by")
        if given.get("decision") == "reply":
            return Answer.reply(str(given.get("text") or ""), by=by)
        if given.get("decision") == "approve":
            return Answer.approve(given.get("reason"), by=by)
        return Answer.deny(given.get("reason"), by=by)


def _rule(payload: Mapping[str, Any]) -> str | None:
    rule = payload.get("rule")
    return rule if isinstance(rule, str) else None


def _as_the_vendor_sent_it(response: ModelResponse) -> ModelResponse:
    """A recorded response with its calls as the provider returned them (the vendor's ids).

    The runtime mints call ids itself (replay hands it the recorded ones), and
    keeps a call's own id as its vendor id only when the vendor gave one.
    """
    calls = [
        ToolCall(
            tool_call_id=call.vendor_id,
            name=call.name,
            arguments=call.arguments,
            signature=call.signature,
        )
        if call.vendor_id is not None
        # no vendor id: the id was the provider's default, which the runtime keeps
        else ToolCall.model_construct(
            {"name", "arguments", "signature"},
            tool_call_id=call.tool_call_id,
            name=call.name,
            arguments=call.arguments,
            vendor_id=None,
            signature=call.signature,
        )
        for call in response.tool_calls
    ]
    return response.model_copy(update={"tool_calls": calls})


class _ReplayProvider:
    """Plays the recorded model outcomes back; interrupts the run when they run out."""

    name = "replay"
    model = None

    def __init__(self, recording: _Recording, attachments: list[Any] | None = None) -> None:
        # the recorded provider's name and model, as MODEL_RESPONDED reports them
        self.name, self.model = recording.provider or ("replay", None)
        # The recording already took the task's attachments: accept what it took.
        documents = {str(a.get("media_type")) for a in attachments or () if isinstance(a, dict)}
        self.capabilities = ProviderCapabilities(
            vision=True, documents=tuple(sorted(documents)), image_urls=True, document_urls=True
        )
        self._outcomes = list(recording.outcomes)
        self._steering = recording.steering
        self.event_sink: Any = None
        self.runtime: Any = None
        self.exhausted = False

    async def generate(self, request: ModelRequest) -> ModelResponse:
        import asyncio

        if not self._outcomes:
            self.exhausted = True
            self.runtime.interrupt(END_OF_RECORDING)
            await asyncio.sleep(3600)  # cancelled by the interrupt
        side, outcome = self._outcomes.pop(0)
        for kind, payload in side:
            if self.event_sink is not None:
                await self.event_sink(kind, payload)
        if isinstance(outcome, BaseException):
            raise outcome
        assert isinstance(outcome, ModelResponse)
        # messages posted while the run worked reach the next step's model call
        for message, source in self._steering.pop(request.step + 1, []):
            self.runtime._steering.post(request.run_id, message, source=source)
        return outcome


class _ReplayTools(ToolRegistry):
    """Answers each call with its recorded result; a call never recorded ends the replay."""

    def __init__(self, recording: _Recording, provider: _ReplayProvider) -> None:
        super().__init__()
        self._recording = recording
        self._provider = provider

    @property
    def metadata(self) -> list[ToolMetadata]:
        """The tools the recording called (names only: requests are not recorded)."""
        return list(self._recording.tools.values())

    def metadata_of(self, name: str) -> ToolMetadata | None:
        """The recorded tool ``name`` (None when the recording never called it)."""
        return self._recording.tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._recording.tools

    async def invoke(self, call: ToolCall, *, completed_tool_call_ids: set[str]) -> ToolResult:
        """The recorded result of ``call`` (first its question, if its tool asked one)."""
        import asyncio

        asked = self._recording.inputs.get(call.tool_call_id)
        if asked is not None and tool_input() is None:
            from avo.exceptions import ToolInputRequiredError

            schema = asked.get("schema")
            raise ToolInputRequiredError(
                "the recorded call asked a person",
                question=str(asked.get("question") or ""),
                schema=dict(schema) if isinstance(schema, dict) else None,
                tool_call_id=call.tool_call_id,
                tool_name=call.name,
            )
        result = self._recording.results.get(call.tool_call_id)
        if result is None:
            self._provider.exhausted = True
            self._provider.runtime.interrupt(END_OF_RECORDING)
            await asyncio.sleep(3600)
        assert result is not None
        return result


def _budget(record: Mapping[str, Any] | None, environ: Mapping[str, str] | None) -> Any:
    if record is None:
        return None
    from avo.budget import budget_from_settings

    table = record["config"].get("budget") or {}
    return budget_from_settings(dict(table), environ=environ) if table else None


def _content(message: Any, limit: int = 80) -> str:
    if not isinstance(message, Mapping):
        return "nothing"
    text = repr(message.get("content"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _transcript_divergence(
    recorded: list[Any], replayed: list[Any], events: list[AgentEvent]
) -> Divergence | None:
    for index in range(max(len(recorded), len(replayed))):
        left = recorded[index] if index < len(recorded) else None
        right = replayed[index] if index < len(replayed) else None
        if left == right:
            continue
        call_id = (left or right or {}).get("tool_call_id")
        source = next(
            (
                e
                for e in events
                if call_id
                and e.event_type in (EventType.TOOL_COMPLETED, EventType.TOOL_FAILED)
                and e.payload.get("tool_call_id") == call_id
            ),
            None,
        )
        kind = source.event_type.value if source is not None else "transcript"
        role = (left or right or {}).get("role", "?")
        return Divergence(
            position=index,
            sequence=source.sequence if source is not None else None,
            recorded={"type": kind, "message": left},
            replayed={"type": kind, "message": right},
            detail=f"the transcript differs at message {index} (role {role}"
            + (f", tool call {call_id}" if call_id else "")
            + "): the recorded run showed the model "
            + f"{_content(left)}, replaying this result shows {_content(right)}",
        )
    return None


def _at(entry: Mapping[str, Any], dotted: str, limit: int = 160) -> str:
    value: Any = entry
    for part in dotted.split("."):
        value = value.get(part, "<absent>") if isinstance(value, Mapping) else "<absent>"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compare(
    recorded: list[tuple[int, dict[str, Any]]],
    replayed: list[tuple[int, dict[str, Any]]],
    *,
    truncated: bool,
) -> Divergence | None:
    for position in range(max(len(recorded), len(replayed))):
        left = recorded[position] if position < len(recorded) else None
        right = replayed[position] if position < len(replayed) else None
        if left is None and truncated:
            return None
        if left is not None and right is not None and left[1] == right[1]:
            continue
        if left is None:
            assert right is not None
            detail = f"today's code goes on with {right[1]['type']} where the recording ended"
        elif right is None:
            detail = f"today's code stops before {left[1]['type']}"
        elif left[1]["type"] != right[1]["type"]:
            detail = f"recorded {left[1]['type']}, today's code writes {right[1]['type']}"
        else:
            key = first_difference(left[1], right[1]) or "?"
            detail = (
                f"{key} differs: recorded {_at(left[1], key)}, today's code {_at(right[1], key)}"
            )
        return Divergence(
            position=position,
            sequence=left[0] if left else None,
            recorded=left[1] if left else None,
            replayed=right[1] if right else None,
            detail=detail,
        )
    return None


async def replay(
    store: Any, run_id: str, *, environ: Mapping[str, str] | None = None
) -> ReplayReport:
    """Replay ``run_id`` from ``store`` and compare; the store is only read."""
    from avo.runtime import AgentRuntime
    from avo.storage.memory import InMemoryEventStore

    run = await store.get_run(run_id)
    events = await store.get_events(run_id)
    if run is None or not events:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    first = events[0].payload
    recording = _Recording(events)
    attachments = first.get("attachments")
    attached = list(attachments) if isinstance(attachments, list) else []
    provider = _ReplayProvider(recording, attached)
    record = recorded_composition(first)
    notes: list[str] = []
    policy = LoopPolicy.model_validate(first.get("policy") or {})
    if run.stop_reason is StopReason.MAX_RUNTIME:
        notes.append("the recording stopped on max_runtime; wall-clock time is not replayed")
    policy = policy.model_copy(update={"max_runtime_seconds": None})
    memory_store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=provider,
        tools=_ReplayTools(recording, provider),
        policy=policy,
        event_store=memory_store,
        approval_callback=lambda call: recording.approvals.get(call.tool_call_id, True),
        answerer=recording.answer,
        hooks=recording.hooks(),  # the recorded rewrites of pre-tool hooks, played back
        budget=_budget(record, environ),
        environ=environ,
        # attachments are read (never written) from the recording store's blobs
        blob_store=blob_store_of(store) if attached else None,
    )
    provider.runtime = runtime
    # The replayed run mints the recorded call ids again (then fresh ones, past the end).
    recorded_ids = iter(recording.call_ids)
    runtime.call_ids = lambda: next(recorded_ids, None) or event_id()
    system_prompt = first.get("system_prompt")
    result = await runtime.run(
        str(first.get("task", run.task)),
        system_prompt=system_prompt if isinstance(system_prompt, str) else None,
        user_state=dict(run.user_state),
        run_id=run_id,
        attachments=attached,
    )
    if provider.exhausted:
        notes.append("the recording ends before the run does (it was interrupted or crashed)")
    if recording.not_replayed:
        kinds = ", ".join(sorted(recording.not_replayed))
        notes.append(f"not compared: {kinds} (replay runs no hooks or request shapers)")
    if recording.hooks_masked:
        notes.append(
            f"{len(recording.hooks_masked)} call(s) had arguments from a hook that the log masked"
            " (a secret); they replay with the model's arguments"
        )
    if 1 in recording.steering:
        notes.append("a message steered into step 1 cannot be replayed (it came before any call)")
    replayed_events = await memory_store.get_events(run_id)
    recorded_trace = comparable(events)
    replayed_trace = comparable(replayed_events)
    ended_by_user = run.state is RunState.CANCELLED
    if ended_by_user:  # a cancellation comes from outside the loop: compare up to it
        while recorded_trace and recorded_trace[-1][1]["type"] in _CANCEL_ENTRIES:
            if recorded_trace[-1][1].get("to_state", RunState.CANCELLED.value) != "cancelled":
                break
            recorded_trace.pop()
        notes.append("the run was cancelled by its user; replay compares up to the cancellation")
    divergence = _compare(
        recorded_trace, replayed_trace, truncated=provider.exhausted or ended_by_user
    )
    finished_alike = is_terminal(run.state) and run.state is result.status
    if divergence is None and finished_alike:
        recorded_cp = await store.get_latest_checkpoint(run_id)
        replayed_cp = await memory_store.get_latest_checkpoint(run_id)
        if recorded_cp is not None and replayed_cp is not None:
            divergence = _transcript_divergence(
                list(recorded_cp.messages), list(replayed_cp.messages), events
            )
    return ReplayReport(
        run_id=run_id,
        compared=min(len(recorded_trace), len(replayed_trace)),
        divergence=divergence,
        recorded_state=run.state.value,
        replayed_state=result.status.value,
        notes=notes,
    )


__all__ = ["END_OF_RECORDING", "Divergence", "ReplayReport", "replay"]
