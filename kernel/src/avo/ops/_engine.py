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
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from avo.engines import Engine, engine_record, open_engine
from avo.exceptions import EngineError, EngineRunGoneError, RunNotFoundError
from avo.models import RunRecord, RunResult
from avo.state import RunState, is_terminal
from avo.storage.base import events_after

POLL_SECONDS = 0.1
"""How often :func:`follow` reads the run head."""

DRIVER_CHECK_SECONDS = 2.0
"""How often :func:`follow` asks the engine whether it still drives the run."""

DriverCheck = Callable[[], Awaitable[str | None]]
"""``check()``: None while the engine drives the run, else why it stopped."""


def driver_check(engine: Any, run_id: str) -> DriverCheck | None:
    """``engine.stopped_driving`` for ``run_id``, when the engine offers it."""
    stopped = getattr(engine, "stopped_driving", None)
    if not callable(stopped):
        return None

    async def check() -> str | None:
        why = await stopped(run_id)
        return str(why) if why else None

    return check


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
) -> DriverCheck | None:
    """Send ``operation`` to the engine driving ``run_id``; the check of its driver (if any)."""
    engine = engine_for(record, run_id, environ)
    await engine.signal(run_id, operation, dict(payload))
    return driver_check(engine, run_id)


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
    driver: DriverCheck | None = None,
) -> RunResult:
    """Read ``run_id`` from the store until it ends (or pauses past event ``after``).

    With ``after=0`` the run may not exist yet (just submitted): it is waited for.

    ``on_event(event)`` sees every event after sequence ``after`` as it appears.
    ``paused_ok=False`` waits past pauses too (until the run is terminal).
    ``driver`` (:func:`driver_check`) is asked every :data:`DRIVER_CHECK_SECONDS`
    whether the engine still drives the run; once it says no, the store is read
    one last time and :class:`~avo.exceptions.EngineRunGoneError` is raised if
    the run did not end there.
    Raises :class:`~avo.exceptions.EngineError` when ``wait_seconds`` pass first.
    """
    deadline = None if wait_seconds is None else time.monotonic() + wait_seconds
    next_check = time.monotonic() + DRIVER_CHECK_SECONDS
    gone: str | None = None  # why the engine stopped driving the run
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
        if gone is not None:
            raise _gone(run_id, run, gone)
        if driver is not None and time.monotonic() >= next_check:
            gone = await driver()  # if so, the store gets one more read first
            next_check = time.monotonic() + DRIVER_CHECK_SECONDS
            if gone is not None:
                continue
        if deadline is not None and time.monotonic() > deadline:
            state = run.state.value if run is not None else "not picked up by a worker"
            raise EngineError(
                f"run {run_id} is still {state} after {wait_seconds:g} s; its engine goes "
                f"on with it: follow it with avo runs inspect {run_id}",
                run_id=run_id,
            )
        await asyncio.sleep(POLL_SECONDS)


def _gone(run_id: str, run: RunRecord | None, why: str) -> EngineRunGoneError:
    if run is None:
        return EngineRunGoneError(
            f"run {run_id} never started: its engine stopped driving it first ({why}); "
            "nothing was recorded. The worker's log says why; fix that and run the task again",
            run_id=run_id,
        )
    return EngineRunGoneError(
        f"run {run_id} is {run.state.value}, but its engine stopped driving it ({why}); "
        f"the worker's log says why. Continue it with avo runs resume {run_id}, "
        f"or end it with avo runs cancel {run_id}",
        run_id=run_id,
    )


def _settled(last: Any) -> bool:
    """True when the log's last event leaves the run paused (not a resume in between)."""
    return last is not None and last.payload.get("to_state") == RunState.PAUSED.value


__all__ = [
    "DriverCheck",
    "driver_check",
    "engine_for",
    "engine_of",
    "follow",
    "relay",
    "result_of_head",
]
