"""Close tool calls that started but never got a result, with a failed result that says so.

Used when the process that ran them can no longer report: an interrupted run
(the call was cut short), a cancelled run, and ``resume --fail-open-tools``
after a crash. The result is a failure the model can read ("…may have partly
taken effect"), so no effect is hidden and none is run again.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from avo.events import AgentEvent, EventType
from avo.models import ToolCall
from avo.runtime_persistence import record_tool_result
from avo.tools import failed_result

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.runtime import AgentRuntime


def open_calls(events: Iterable[AgentEvent], open_ids: set[str]) -> list[tuple[ToolCall, datetime]]:
    """The open calls (name, arguments) and when each started, from their TOOL_STARTED events."""
    found: dict[str, tuple[ToolCall, datetime]] = {}
    for event in events:
        payload = event.payload
        call_id = payload.get("tool_call_id")
        if event.event_type is EventType.TOOL_STARTED and call_id in open_ids:
            arguments = payload.get("arguments")
            call = ToolCall(
                tool_call_id=str(call_id),
                name=str(payload.get("name") or "?"),
                arguments=arguments if isinstance(arguments, dict) else {},
            )
            found[str(call_id)] = (call, event.created_at)
    return [found[call_id] for call_id in sorted(found)]


async def abandon_open_calls(
    rt: AgentRuntime, ctx: _RunContext, events: Iterable[AgentEvent], why: str
) -> list[str]:
    """Record a failed result for every call ``ctx.log`` shows open; returns their ids."""
    closed = []
    for call, started_at in open_calls(events, ctx.log.open_tool_calls):
        error = (
            f"the tool call did not finish: {why}; it may have partly taken effect, "
            "so check before running it again"
        )
        started = min(started_at, rt.clock())
        result = failed_result(call, error, started, rt.timer(), clock=rt.clock, timer=rt.timer)
        await record_tool_result(rt, ctx, result)
        closed.append(call.tool_call_id)
    return closed


__all__ = ["abandon_open_calls", "open_calls"]
