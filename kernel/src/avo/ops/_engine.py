"""Operations on a run an engine drives: relayed to the engine, then followed in the store.

A run whose RUN_CREATED records an engine (:mod:`avo.engines`) is written by
that engine's driver only. :func:`avo.ops.cancel`, the answers of
:mod:`avo.ops.approval` and :func:`avo.ops.resume` therefore hand the
operation to the engine as a signal (:func:`relay`) and read the outcome
back from the store (:func:`follow`), the same store every front end reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from avo.engines import Engine, engine_record, open_engine
from avo.exceptions import EngineError, RunNotFoundError
from avo.models import RunRecord, RunResult
from avo.state import RunState, is_terminal
from avo.storage.base import events_after

POLL_SECONDS = 0.1
"""How often :func:`follow` reads the run head."""


async def engine_of(store: Any, run_id: str) -> dict[str, Any] | None:
    """The engine that drives ``run_id`` (its RUN_CREATED record), or None (in-process)."""
    return engine_record(await store.get_events(run_id))


def engine_for(record: Mapping[str, Any], run_id: str, environ: Mapping[str, str] | None) -> Engine:
    """The engine a run records, built from its recorded settings and ``environ``."""
    settings = record.get("settings")
    return open_engine(
        str(record["name"]),
        settings=settings if isinstance(settings, Mapping) else None,
        environ=environ,
        source=f"run {run_id} (its engine record)",
    )


async def relay(
    record: Mapping[str, Any],
    run_id: str,
    operation: str,
    payload: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Send ``operation`` to the engine driving ``run_id``."""
    await engine_for(record, run_id, environ).signal(run_id, operation, dict(payload))


def result_of_head(run: RunRecord) -> RunResult:
    """The RunResult a run head describes (what ``run``/``resume`` would have returned)."""
    return RunResult(
        run_id=run.run_id,
        status=run.state,
        stop_reason=run.stop_reason,
        output=run.output,
        error=run.error,
        steps=run.steps,
        token_usage=run.token_usage,
        token_accounting_available=run.token_accounting_available,
    )


async def follow(
    store: Any,
    run_id: str,
    *,
    after: int = 0,
    wait_seconds: float | None = None,
    on_event: Any = None,
    paused_ok: bool = True,
) -> RunResult:
    """Read ``run_id`` from the store until it ends (or pauses past event ``after``).

    With ``after=0`` the run may not exist yet (just submitted): it is waited for.

    ``on_event(event)`` sees every event after sequence ``after`` as it appears.
    ``paused_ok=False`` waits past pauses too (until the run is terminal).
    Raises :class:`~avo.exceptions.EngineError` when ``wait_seconds`` pass first.
    """
    deadline = None if wait_seconds is None else time.monotonic() + wait_seconds
    seen = after
    last: Any = None  # the newest event read so far
    while True:
        # Only what is new: a long run's whole log is not read again every poll.
        for event in await events_after(store, run_id, seen):
            if on_event is not None:
                on_event(event)
            seen, last = event.sequence, event
        run = await store.get_run(run_id) if seen else None
        if run is None and after:  # it existed when we started
            raise RunNotFoundError(
                f"run {run_id!r} was not found in the event store", run_id=run_id
            )
        if run is not None and (
            is_terminal(run.state)
            or (paused_ok and seen > after and run.state is RunState.PAUSED and _settled(last))
        ):
            return result_of_head(run)
        if deadline is not None and time.monotonic() > deadline:
            state = run.state.value if run is not None else "not picked up by a worker"
            raise EngineError(
                f"run {run_id} is still {state} after {wait_seconds:g} s; its engine goes "
                f"on with it: follow it with avo runs inspect {run_id}",
                run_id=run_id,
            )
        await asyncio.sleep(POLL_SECONDS)


def _settled(last: Any) -> bool:
    """True when the log's last event leaves the run paused (not a resume in between)."""
    return last is not None and last.payload.get("to_state") == RunState.PAUSED.value


__all__ = ["engine_for", "engine_of", "follow", "relay", "result_of_head"]
