"""The run-bound checks the handlers share: runtime, consecutive errors, no progress."""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo._hook_faults import report_hook_faults
from avo._run_context import _RunContext
from avo.hooks import HookContext, HookEvent
from avo.runtime_persistence import elapsed_seconds, flush, trigger_policy
from avo.state import StopReason

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime


async def check_consecutive_errors(rt: AgentRuntime, ctx: _RunContext) -> bool:
    limit = ctx.policy.consecutive_error_limit
    if ctx.consecutive_errors < limit:
        return False
    message = f"Run stopped: {ctx.consecutive_errors} consecutive errors (limit {limit})."
    if ctx.last_error:
        message += f" Last error: {ctx.last_error}"
    if rt.hooks is not None:
        await flush(rt, ctx)
        decision = await rt.hooks.fire(
            HookEvent.NOTIFICATION,
            HookContext(HookEvent.NOTIFICATION, ctx.run_id, run=ctx.run, notification=message),
        )
        if decision.faults:
            report_hook_faults(
                rt, ctx, "notification", decision.faults, outcome="ignored", run_id=ctx.run_id
            )
    await trigger_policy(rt, ctx, StopReason.CONSECUTIVE_ERRORS, message)
    return True


async def stopped_by_runtime_bound(rt: AgentRuntime, ctx: _RunContext) -> bool:
    """Stop the run (MAX_RUNTIME) once it has run for max_runtime_seconds."""
    policy = ctx.policy
    elapsed = elapsed_seconds(rt, ctx)
    if policy.runtime_reason(elapsed) is None:
        return False
    await trigger_policy(
        rt,
        ctx,
        StopReason.MAX_RUNTIME,
        f"Run stopped: max_runtime_seconds ({policy.max_runtime_seconds:g}) reached "
        f"after {elapsed:.3f}s.",
    )
    return True


async def after_observation_checks(rt: AgentRuntime, ctx: _RunContext) -> None:
    policy = ctx.policy
    if await stopped_by_runtime_bound(rt, ctx):
        return
    if await check_consecutive_errors(rt, ctx):
        return
    if ctx.detector.no_progress(policy.no_progress_window):
        await trigger_policy(
            rt,
            ctx,
            StopReason.NO_PROGRESS,
            f"Run stopped: no progress over the last {policy.no_progress_window} observations.",
        )


__all__ = ["after_observation_checks", "check_consecutive_errors", "stopped_by_runtime_bound"]
