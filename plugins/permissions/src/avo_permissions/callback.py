"""Build the runtime's ``approval_callback`` from a permission policy (§18.2).

Approval is one seam (§19.7): this only builds a callback; the runtime records
each outcome as TOOL_APPROVED or TOOL_DENIED. The callback also keeps a log of
``(tool_call_id, tool name, decision, approved)`` for callers that want the
reason behind each outcome.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from avo.models import ToolCall, ToolMetadata, ToolRisk
from avo_permissions.modes import (
    PLAN_TOOL_NAME,
    Decision,
    PermissionMode,
    PermissionPolicy,
    decide,
    permission_policy_from_env,
)

Prompter = Callable[[ToolCall], bool | Awaitable[bool]]


class InteractivePrompter:
    """Ask on a terminal: ``Approve {name}({args})? [y/N]: `` — only y/yes approves.

    End of input (no terminal, closed stdin) is a no: a run never proceeds on
    silence.
    """

    def __init__(self, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin
        self.stdout = stdout

    def __call__(self, call: ToolCall) -> bool:
        out = self.stdout or sys.stdout
        args = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
        out.write(f"Approve {call.name}({args})? [y/N]: ")
        out.flush()
        answer = (self.stdin or sys.stdin).readline()
        return answer.strip().lower() in {"y", "yes"}


@dataclass(frozen=True)
class ApprovalRecord:
    """One decision the callback made."""

    tool_call_id: str
    tool_name: str
    risk: ToolRisk
    decision: Decision
    approved: bool


@dataclass
class PermissionCallback:
    """The approval callback a permission mode builds. Call it with a ToolCall."""

    policy: PermissionPolicy
    risks: dict[str, ToolRisk]
    prompter: Prompter
    plan_submitted: bool = False
    records: list[ApprovalRecord] = field(default_factory=list)

    def risk_of(self, name: str) -> ToolRisk:
        """The tool's declared risk; EXECUTE for tools it was not told about."""
        return self.risks.get(name, ToolRisk.EXECUTE)

    async def __call__(self, call: ToolCall) -> bool:
        risk = self.risk_of(call.name)
        decision = decide(
            call.name,
            self.policy.mode,
            risk=risk,
            plan_submitted=self.plan_submitted,
            require_approval=self.policy.require_approval,
        )
        if decision is Decision.APPROVE:
            approved = True
        elif decision is Decision.DENY:
            approved = False
        else:
            answer = self.prompter(call)
            approved = bool(await answer) if inspect.isawaitable(answer) else bool(answer)
        if approved and call.name == PLAN_TOOL_NAME:
            self.plan_submitted = True
        self.records.append(ApprovalRecord(call.tool_call_id, call.name, risk, decision, approved))
        return approved


def _risks(tools: Iterable[Any]) -> dict[str, ToolRisk]:
    risks: dict[str, ToolRisk] = {}
    for item in tools:
        metadata: ToolMetadata = item if isinstance(item, ToolMetadata) else item.metadata
        risks[metadata.name] = metadata.effective_risk
    return risks


def build_approval_callback(
    policy: PermissionPolicy,
    *,
    tools: Iterable[ToolMetadata | Any] = (),
    prompter: Prompter | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> PermissionCallback:
    """The callback for ``policy``; ``tools`` (metadata or Tool objects) give the risks."""
    return PermissionCallback(
        policy=policy,
        risks=_risks(tools),
        prompter=prompter or InteractivePrompter(stdin=stdin, stdout=stdout),
    )


def build_mode_callback(
    mode: PermissionMode | str,
    *,
    tools: Iterable[ToolMetadata | Any] = (),
    require_approval: Iterable[str] = (),
    prompter: Prompter | None = None,
) -> PermissionCallback:
    """Shorthand: a callback for ``mode``."""
    policy = PermissionPolicy(mode=PermissionMode(mode), require_approval=tuple(require_approval))
    return build_approval_callback(policy, tools=tools, prompter=prompter)


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
