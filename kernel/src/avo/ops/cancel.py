"""``cancel``: end a run for good (CANCELLED / user_cancelled), whatever state it stopped in.

Works on a run no one is driving: interrupted (paused), crashed mid-step, or
killed while a tool ran (the open call gets a failed result saying its effect
is unknown, then the run ends). A run a live process is driving is refused
with :class:`~avo.exceptions.RunBusyError` naming the holder: stop it there
first (its Ctrl-C interrupts it; then cancel).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from avo.events import RunLogState
from avo.exceptions import RunAlreadyTerminalError, RunNotFoundError
from avo.models import RunResult
from avo.ops._abandon import abandon_open_calls
from avo.ops._context import offline_runtime, run_context
from avo.ops.leases import holding_lease
from avo.runtime_persistence import result_of, terminate
from avo.state import RunState, StopReason, is_terminal

DEFAULT_REASON = "cancelled by the user"


async def cancel(
    store: Any,
    run_id: str,
    *,
    reason: str = DEFAULT_REASON,
    owner: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> RunResult:
    """Cancel ``run_id`` in ``store``; returns the run's final result.

    Raises RunNotFoundError, RunAlreadyTerminalError, or RunBusyError when a
    live process holds the run's lease.
    """
    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    if is_terminal(run.state) or await store.is_terminal_run(run_id):
        raise RunAlreadyTerminalError(
            f"run {run_id} already finished ({run.state.value}); there is nothing to cancel",
            run_id=run_id,
        )
    async with holding_lease(store, run_id, owner=owner, doing="cancel") as writer:
        events = await writer.get_events(run_id)
        log = RunLogState.from_events(run_id, events)
        checkpoint = await writer.get_latest_checkpoint(run_id)
        rt = offline_runtime(writer, environ=environ)
        ctx = run_context(rt, run, log, checkpoint)
        await abandon_open_calls(rt, ctx, events, f"the run was cancelled ({reason})")
        await terminate(rt, ctx, RunState.CANCELLED, StopReason.USER_CANCELLED, error=reason)
        return result_of(ctx)


__all__ = ["DEFAULT_REASON", "cancel"]
