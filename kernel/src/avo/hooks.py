"""Run hooks: PRE_TOOL_USE, POST_TOOL_USE, NOTIFICATION, STOP (§18.1)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

from avo.models import RunRecord, ToolCall, ToolResult


class HookEvent(StrEnum):
    """Where in a run a hook fires."""

    PRE_TOOL_USE = "pre_tool_use"
    POST_TOOL_USE = "post_tool_use"
    STOP = "stop"
    NOTIFICATION = "notification"


class HookAction(Enum):
    """Whether a hook lets the run go on."""

    ALLOW = "allow"
    BLOCK = "block"


@dataclass(frozen=True)
class HookDecision:
    """What a hook decided."""

    action: HookAction = HookAction.ALLOW
    reason: str = ""
    modified_args: dict[str, Any] | None = None

    @classmethod
    def allow(cls, reason: str = "") -> HookDecision:
        """Let the run go on."""
        return cls(HookAction.ALLOW, reason)

    @classmethod
    def block(cls, reason: str) -> HookDecision:
        """Stop the tool call (PRE_TOOL_USE) with ``reason``."""
        return cls(HookAction.BLOCK, reason)

    @property
    def blocked(self) -> bool:
        """True for BLOCK."""
        return self.action is HookAction.BLOCK


@dataclass
class HookContext:
    """What a hook sees."""

    event: HookEvent
    run_id: str
    tool_call: ToolCall | None = None
    tool_result: ToolResult | None = None
    run: RunRecord | None = None
    notification: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


HookCallable = Callable[[HookContext], HookDecision | Awaitable[HookDecision]]


class HookRegistry:
    """Hooks by event, in registration order."""

    def __init__(self) -> None:
        self._hooks: dict[HookEvent, list[HookCallable]] = {event: [] for event in HookEvent}

    def register(self, event: HookEvent, hook: HookCallable) -> None:
        """Add ``hook`` for ``event``."""
        self._hooks[HookEvent(event)].append(hook)

    def hooks_for(self, event: HookEvent) -> tuple[HookCallable, ...]:
        """The hooks registered for ``event``."""
        return tuple(self._hooks[event])

    def __bool__(self) -> bool:
        return any(self._hooks.values())

    async def fire(self, event: HookEvent, context: HookContext) -> HookDecision:
        """Call the hooks in order; the first BLOCK wins. A raising hook counts as ALLOW.

        An ALLOW may carry ``modified_args`` (PRE_TOOL_USE); the last one given wins.
        """
        reasons: list[str] = []
        modified: dict[str, Any] | None = None
        for hook in self._hooks[event]:
            try:
                decision = hook(context)
                if inspect.isawaitable(decision):
                    decision = await decision
            except Exception as exc:
                reasons.append(f"hook raised {type(exc).__name__}: {exc}")
                continue
            if not isinstance(decision, HookDecision):
                continue
            if decision.blocked:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
            if decision.modified_args is not None:
                modified = decision.modified_args
        return HookDecision(HookAction.ALLOW, "; ".join(reasons), modified)


def make_blocking_hook(reason: str) -> HookCallable:
    """A hook that always blocks with ``reason``."""

    def hook(context: HookContext) -> HookDecision:
        return HookDecision.block(reason)

    return hook


def make_logging_hook(sink: list[Any]) -> HookCallable:
    """A hook that appends ``(event, run_id, tool name)`` to ``sink`` and allows."""

    def hook(context: HookContext) -> HookDecision:
        name = context.tool_call.name if context.tool_call else None
        sink.append((context.event.value, context.run_id, name))
        return HookDecision.allow()

    return hook


__all__ = [
    "HookAction",
    "HookCallable",
    "HookContext",
    "HookDecision",
    "HookEvent",
    "HookRegistry",
    "make_blocking_hook",
    "make_logging_hook",
]
