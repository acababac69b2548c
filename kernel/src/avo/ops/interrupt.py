"""Interrupt vs cancel: an interrupted run is PAUSED and resumable; a cancelled one is over.

A front end interrupts the run it drives with :meth:`AgentRuntime.interrupt`
(the CLI does it on the first Ctrl-C or on SIGTERM; the chat REPL on Ctrl-C).
The runtime then calls :func:`pause_interrupted`: any tool call cut short gets
a failed result saying it may have partly taken effect, and the run moves to
``paused`` with ``{"reason": "interrupted"}`` in the STATE_CHANGED payload.
``avo runs resume`` continues it from its last checkpoint. Ending a run for
good is :func:`avo.ops.cancel`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo.events import EventType
from avo.ops._abandon import abandon_open_calls
from avo.runtime_persistence import append_with_run, flush
from avo.state import RunState, is_terminal

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.runtime import AgentRuntime

INTERRUPTED = "interrupted"
"""The ``reason`` of the STATE_CHANGED to ``paused`` an interrupt records."""


async def pause_interrupted(rt: AgentRuntime, ctx: _RunContext, detail: str) -> None:
    """Close calls cut short, then move the run to PAUSED (called by the runtime)."""
    if is_terminal(ctx.run.state):
        return
    if ctx.log.open_tool_calls:
        events = await rt.event_store.get_events(ctx.run_id)
        await abandon_open_calls(rt, ctx, events, detail)
    if ctx.run.state is not RunState.PAUSED:
        append_with_run(
            rt,
            ctx,
            EventType.STATE_CHANGED,
            {
                "from_state": ctx.run.state.value,
                "to_state": RunState.PAUSED.value,
                "reason": INTERRUPTED,
                "detail": detail,
            },
            state=RunState.PAUSED,
        )
    await flush(rt, ctx)


def pause_reason(events: list[object]) -> str | None:
    """Why a PAUSED run paused (the ``reason`` of its last STATE_CHANGED to paused)."""
    from avo.events import AgentEvent

    for event in reversed(events):
        if (
            isinstance(event, AgentEvent)
            and event.event_type is EventType.STATE_CHANGED
            and event.payload.get("to_state") == RunState.PAUSED.value
        ):
            reason = event.payload.get("reason")
            return str(reason) if reason else None
    return None


__all__ = ["INTERRUPTED", "pause_interrupted", "pause_reason"]
