"""Run hooks: what a run calls at PRE_TOOL_USE, POST_TOOL_USE, NOTIFICATION and STOP.

A run hook is a callable ``hook(context) -> HookDecision | None`` (plain or
async) registered on a :class:`HookRegistry` for one :class:`HookEvent`. A
composed runtime gets its hooks from ``avo.hooks`` plugins (``hooks = [...]``
in avo.toml); in Python, pass ``AgentRuntime(hooks=registry)``.

When each event fires:

- ``pre_tool_use``: before each tool call is decided, in the model's order,
  ahead of the approval callback; the context holds the call;
- ``post_tool_use``: after the call's result is durable (context: call and result);
- ``notification``: when the consecutive-error limit is reached, and when a
  run pauses because it waits for a person (the text says what for and how to
  answer; ``context.extra["requests"]`` holds the requests);
- ``stop``: after the run ended (its terminal event is durable).

What a pre-tool hook decides, in registration order (the first block or fault wins):

- **allow**: return ``None`` or ``HookDecision.allow()``; an allow with
  ``modified_args`` replaces the call's arguments (the last rewrite wins);
- **deny**: ``HookDecision.block(reason)``: the call is denied (TOOL_DENIED,
  ``blocked_by: "hook"``); the reason is what the model reads as the call's
  result and the run goes on (``LoopPolicy.on_tool_denied = "stop"`` ends it);
- **error**: a hook that raises (a hook executor raises
  :class:`~avo.exceptions.HookError` when it got no decision: crashed, timed
  out, unreachable, a malformed reply), or returns something that is not a
  :class:`HookDecision`, is a *fault*. A pre-tool fault **fails closed**: the
  call is denied with the hook's name in the reason. Every fault is recorded
  as a HOOK_FAILED event (once per run and hook) and logged as a warning on
  the ``avo.hooks`` logger; at the other events the run goes on.

A call's pre-tool hooks run once, when the call is first decided. A call
approved before a pause, or waiting for a person, is not hooked again when
the run continues, in place or resumed by another process: the arguments a
hook gave it are recorded with the decision (TOOL_APPROVED /
HUMAN_INPUT_REQUESTED say ``hook_arguments: "exact"``) and used as recorded.
Only when the log had to mask a secret in those arguments
(``hook_arguments: "redacted"``) does resuming run the hooks again for that
call: RUN_RESUMED lists it under ``hooks_again`` and the hook sees
``context.extra["again"] = True`` (the avo-hooks executors send
``"again": true``), so a hook with side effects can tell.

Faults and denials name a hook by ``HookRegistry.register(event, hook,
name=...)``; composed hooks are named after their plugin, or by the hook
object's own ``hook_label`` when it has one.

The ``avo-hooks`` plugins run hooks outside Python: ``command`` runs an
executable with the event as JSON on stdin (exit 0 and its JSON reply decide,
exit 2 denies with stderr as the reason, anything else is an error) and
``http`` POSTs the event to a URL within a timeout (a 2xx reply decides;
anything else is an error). Both mask secrets in what they send and take
``events``, ``tools`` (name globs) and ``timeout`` settings; the reply is
``{"decision": "allow" | "deny" | "error", "reason": ..., "arguments": ...}``.
See ``plugins/hooks/README.md``.
"""

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
class HookFault:
    """A hook that raised (or answered with something that is not a decision)."""

    hook: str
    error_type: str
    error: str

    def __str__(self) -> str:
        return f"hook {self.hook!r} raised {self.error_type}: {self.error}"


@dataclass(frozen=True)
class HookDecision:
    """What a hook decided (and, from :meth:`HookRegistry.fire`, which hooks faulted)."""

    action: HookAction = HookAction.ALLOW
    reason: str = ""
    modified_args: dict[str, Any] | None = None
    faults: tuple[HookFault, ...] = ()

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


def hook_name(hook: Any) -> str:
    """A readable name for a hook callable (its qualified name, else its repr)."""
    name = getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None)
    return str(name) if name else repr(hook)


class HookRegistry:
    """Hooks by event, in registration order."""

    def __init__(self) -> None:
        self._hooks: dict[HookEvent, list[HookCallable]] = {event: [] for event in HookEvent}
        self._names: dict[int, str] = {}

    def register(self, event: HookEvent, hook: HookCallable, *, name: str | None = None) -> None:
        """Add ``hook`` for ``event``; ``name`` is how faults report it (default: its own)."""
        self._hooks[HookEvent(event)].append(hook)
        if name:
            self._names[id(hook)] = name

    def hooks_for(self, event: HookEvent) -> tuple[HookCallable, ...]:
        """The hooks registered for ``event``."""
        return tuple(self._hooks[event])

    def name_of(self, hook: HookCallable) -> str:
        """The name faults report ``hook`` by."""
        return self._names.get(id(hook)) or hook_name(hook)

    def __bool__(self) -> bool:
        return any(self._hooks.values())

    async def fire(self, event: HookEvent, context: HookContext) -> HookDecision:
        """Call the hooks in order; the first BLOCK wins.

        A hook that raises, or returns anything but a :class:`HookDecision` or
        ``None``, is listed in the result's ``faults``. At PRE_TOOL_USE such a
        fault blocks the call (fail closed) with the hook's name in the reason;
        at the other events the remaining hooks still run and the result allows.
        An ALLOW may carry ``modified_args`` (PRE_TOOL_USE); the last one given wins.
        """
        reasons: list[str] = []
        faults: list[HookFault] = []
        modified: dict[str, Any] | None = None
        guard = event is HookEvent.PRE_TOOL_USE
        for hook in self._hooks[event]:
            try:
                decision = hook(context)
                if inspect.isawaitable(decision):
                    decision = await decision
                if decision is not None and not isinstance(decision, HookDecision):
                    raise TypeError(
                        f"returned {type(decision).__name__}, not a HookDecision (or None)"
                    )
            except Exception as exc:
                fault = HookFault(self.name_of(hook), type(exc).__name__, str(exc))
                faults.append(fault)
                if guard:
                    reason = f"{fault}; a failing pre_tool_use guard denies the call"
                    return HookDecision(HookAction.BLOCK, reason, None, tuple(faults))
                reasons.append(str(fault))
                continue
            if decision is None:
                continue
            if decision.blocked:
                return HookDecision(HookAction.BLOCK, decision.reason, None, tuple(faults))
            if decision.reason:
                reasons.append(decision.reason)
            if decision.modified_args is not None:
                modified = decision.modified_args
        return HookDecision(HookAction.ALLOW, "; ".join(reasons), modified, tuple(faults))


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
    "HookFault",
    "HookRegistry",
    "make_blocking_hook",
    "hook_name",
    "make_logging_hook",
]
