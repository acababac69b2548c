"""``cancel``: end a run for good (CANCELLED / user_cancelled), whatever state it stopped in.

Works on a run no one is driving: interrupted (paused), crashed mid-step, or
killed while a tool ran (the open call gets a failed result saying its effect
is unknown, then the run ends). A run a live process is driving is refused
with :class:`~avo.exceptions.RunBusyError` naming the holder: stop it there
first (its Ctrl-C interrupts it; then cancel). A run an engine drives
(:mod:`avo.engines`, e.g. a Temporal workflow) gets the cancel as a signal:
its driver ends it, whatever it is doing. An engine that no longer drives the
run (its workflow was terminated before the run ended: the engine raises
:class:`~avo.exceptions.EngineRunGoneError`) has no one to hand the cancel to,
and nobody writes the run: it is cancelled here, in the store, like a run
whose process died (its open calls closed with a failed result).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from avo.engines import engine_record
from avo.events import AgentEvent, RunLogState
from avo.exceptions import EngineRunGoneError, RunAlreadyTerminalError, RunNotFoundError
from avo.models import RunRecord, RunResult
from avo.ops._abandon import abandon_open_calls
from avo.ops._context import offline_runtime, run_context
from avo.ops._engine import follow, relay
from avo.ops.leases import holding_lease
from avo.runtime_persistence import result_of, terminate
from avo.state import RunState, StopReason, is_terminal

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.runtime import AgentRuntime

DEFAULT_REASON = "cancelled by the user"


async def cancel(
    store: Any,
    run_id: str,
    *,
    reason: str = DEFAULT_REASON,
    owner: str | None = None,
    environ: Mapping[str, str] | None = None,
    wait_seconds: float = 60.0,
) -> RunResult:
    """Cancel ``run_id`` in ``store``; returns the run's final result.

    Raises RunNotFoundError, RunAlreadyTerminalError, or RunBusyError when a
    live process holds the run's lease. A run an engine drives (avo.engines)
    is cancelled by its driver: the cancel is relayed to the engine and this
    waits up to ``wait_seconds`` for the run to end (EngineError after); when
    the engine says no driver is left (EngineRunGoneError), it is cancelled here.
    """
    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    if is_terminal(run.state) or await store.is_terminal_run(run_id):
        raise RunAlreadyTerminalError(
            f"run {run_id} already finished ({run.state.value}); there is nothing to cancel",
            run_id=run_id,
        )
    events = await store.get_events(run_id)
    record = engine_record(events)
    if record is not None:
        try:
            driver = await relay(record, run_id, "cancel", {"reason": reason}, environ=environ)
        except EngineRunGoneError:
            pass  # no driver left to end it: end it here, as a dead process's run
        else:
            after = events[-1].sequence if events else 0
            return await follow(
                store,
                run_id,
                after=after,
                wait_seconds=wait_seconds,
                paused_ok=False,
                driver=driver,
            )
    async with holding_lease(store, run_id, owner=owner, doing="cancel") as writer:
        return await cancel_run(offline_runtime(writer, environ=environ), run, reason)


async def cancel_run(rt: AgentRuntime, run: RunRecord, reason: str) -> RunResult:
    """Cancel the stored run ``run`` through ``rt`` (its store, clock and ids); nobody drives it.

    What :func:`cancel` does once it holds the lease; an engine's driver (a
    workflow) calls it with its own runtime to cancel a run it is not driving now.
    """
    store = rt.event_store
    events = await store.get_events(run.run_id)
    log = RunLogState.from_events(run.run_id, events)
    checkpoint = await store.get_latest_checkpoint(run.run_id)
    ctx = run_context(rt, run, log, checkpoint)
    await end_cancelled(rt, ctx, reason, events)
    return result_of(ctx)


async def end_cancelled(
    rt: AgentRuntime, ctx: _RunContext, reason: str, events: list[AgentEvent] | None = None
) -> None:
    """Close calls cut short (their effect is unknown), then end the run CANCELLED."""
    if is_terminal(ctx.run.state):
        return
    if ctx.log.open_tool_calls:
        if events is None:
            events = await rt.event_store.get_events(ctx.run_id)
        await abandon_open_calls(rt, ctx, events, f"the run was cancelled ({reason})")
    await terminate(rt, ctx, RunState.CANCELLED, StopReason.USER_CANCELLED, error=reason)


__all__ = ["DEFAULT_REASON", "cancel", "cancel_run", "end_cancelled"]
