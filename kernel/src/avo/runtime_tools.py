"""The tool-call handlers: TOOL_PENDING, APPROVAL_PENDING and TOOL_EXECUTING.

A call is requested, approved (PRE_TOOL_USE hooks, then the approval seam) and
run under its timeout; ``TOOL_STARTED`` is durable before the tool can act.
"""

from __future__ import annotations

import inspect
import time
from typing import TYPE_CHECKING, Any

from avo._deadline import within
from avo._hook_faults import report_hook_faults
from avo._run_context import _RunContext
from avo.events import EventType
from avo.hooks import HookContext, HookEvent
from avo.models import ToolCall, utc_now
from avo.runtime_checks import after_observation_checks
from avo.runtime_persistence import (
    append,
    checkpoint,
    flush,
    record_tool_result,
    terminate,
    transition,
    trigger_policy,
)
from avo.state import RunState, StopReason
from avo.tools import failed_result

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime


def always_approve(call: ToolCall) -> bool:
    """The default approval callback: approve every call (the handler skips flushing for it)."""
    return True


async def handle_tool_pending(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Always request approval (there is no bypass path)."""
    call = pending_call(ctx)
    redacted = call_payload(rt, ctx, call)
    call_id = redacted["tool_call_id"]
    append(
        rt,
        ctx,
        EventType.TOOL_APPROVAL_REQUESTED,
        {
            "tool_call_id": call_id,
            "idempotency_key": f"{ctx.run_id}:{call_id}",
            "name": redacted["name"],
            "mode": "v0.1_callback",
        },
        redact=False,
    )
    transition(rt, ctx, RunState.APPROVAL_PENDING)


async def _deny(rt: AgentRuntime, ctx: _RunContext, reason: str, blocked_by: str) -> None:
    call = pending_call(ctx)
    append(
        rt,
        ctx,
        EventType.TOOL_DENIED,
        {
            "tool_call_id": call.tool_call_id,
            "name": call.name,
            "reason": reason,
            "blocked_by": blocked_by,
        },
    )
    await trigger_policy(
        rt, ctx, StopReason.POLICY_DENIED, f"Run stopped: tool {call.name!r} denied: {reason}"
    )


async def handle_approval_pending(rt: AgentRuntime, ctx: _RunContext) -> None:
    """PRE_TOOL_USE hooks first, then the approval callback (the one approval seam)."""
    call = pending_call(ctx)
    if rt.hooks is not None or rt._approval_callback is not always_approve:
        await flush(rt, ctx)  # an outside party decides: let it see the request
    if rt.hooks is not None:
        decision = await rt.hooks.fire(
            HookEvent.PRE_TOOL_USE,
            HookContext(HookEvent.PRE_TOOL_USE, ctx.run_id, tool_call=call, run=ctx.run),
        )
        if decision.faults:  # a failing guard fails closed: the decision blocks
            report_hook_faults(
                rt, ctx, "pre_tool_use", decision.faults, outcome="denied", run_id=ctx.run_id
            )
        if decision.blocked:
            await _deny(rt, ctx, decision.reason or "blocked by a pre_tool_use hook", "hook")
            return
        if decision.modified_args is not None:
            call = call.model_copy(update={"arguments": dict(decision.modified_args)})
            ctx.pending_call = call
    approved = rt._approval_callback(call)
    if inspect.isawaitable(approved):
        approved = await approved
    if not approved:
        await _deny(rt, ctx, "the approval callback denied the tool call", "approval")
        return
    append(rt, ctx, EventType.TOOL_APPROVED, dict(call_payload(rt, ctx, call)), redact=False)
    transition(rt, ctx, RunState.TOOL_EXECUTING)


async def handle_tool_executing(rt: AgentRuntime, ctx: _RunContext) -> None:
    """TOOL_STARTED (durable), run the tool under the timeout, record the result, check."""
    call = pending_call(ctx)
    policy = ctx.policy
    append(rt, ctx, EventType.TOOL_STARTED, dict(call_payload(rt, ctx, call)), redact=False)
    await flush(rt, ctx)  # TOOL_STARTED is durable before the tool can have any effect
    started_at = utc_now()
    started = time.perf_counter()
    crashed: str | None = None
    try:
        result = await within(
            policy.tool_timeout_seconds,
            rt.tools.invoke(call, completed_tool_call_ids=ctx.completed_tool_call_ids),
        )
    except TimeoutError:
        error = (
            f"Tool {call.name!r} exceeded the configured timeout of "
            f"{policy.tool_timeout_seconds:g} seconds."
        )
        result = failed_result(call, error, started_at, started)
    except Exception as exc:
        crashed = f"Tool {call.name!r} raised {type(exc).__name__}: {exc}"
        result = failed_result(call, crashed, started_at, started)
    await record_tool_result(rt, ctx, result)
    if crashed is not None:
        await terminate(rt, ctx, RunState.FAILED, StopReason.TOOL_ERROR, error=crashed)
        return
    ctx.pending_response = None
    ctx.pending_call = None
    transition(rt, ctx, RunState.OBSERVATION_RECORDED)
    if rt.hooks is not None:
        await flush(rt, ctx)
        after = await rt.hooks.fire(
            HookEvent.POST_TOOL_USE,
            HookContext(
                HookEvent.POST_TOOL_USE, ctx.run_id, tool_call=call, tool_result=result, run=ctx.run
            ),
        )
        if after.faults:
            report_hook_faults(
                rt, ctx, "post_tool_use", after.faults, outcome="ignored", run_id=ctx.run_id
            )
    await checkpoint(rt, ctx)
    await after_observation_checks(rt, ctx)


def call_payload(rt: AgentRuntime, ctx: _RunContext, call: ToolCall) -> dict[str, Any]:
    """The redacted tool_call_id / name / arguments of ``call``, redacted once per call.

    TOOL_REQUESTED, TOOL_APPROVAL_REQUESTED, TOOL_APPROVED and TOOL_STARTED all
    carry them; a hook that rewrites the arguments makes a new call object.
    """
    cached = ctx.call_payload
    if cached is None or cached[0] is not call:
        payload = {
            "tool_call_id": call.tool_call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        cached = ctx.call_payload = (call, rt.redactor.value(payload))
    return cached[1]


def pending_call(ctx: _RunContext) -> ToolCall:
    call = ctx.pending_call
    if call is None:
        response = ctx.pending_response
        call = response.tool_call if response is not None else None
        if call is None:
            raise RuntimeError(f"state {ctx.state.value} without a pending tool call")
        ctx.pending_call = call
    return call


__all__ = [
    "always_approve",
    "call_payload",
    "handle_approval_pending",
    "handle_tool_executing",
    "handle_tool_pending",
    "pending_call",
]
