"""SIGKILL at seeded random points of a tool loop on PostgreSQL, then resume.

Each trial is a real process (``postgres_crasher.py``) that kills itself just
before or just after its K-th store write (K drawn from the writes a clean run
makes: 78 through the single-event methods, 15 when the runtime batches each
durable boundary into one ``append_batch``). Afterwards
the store must hold a valid log, and ``resume`` must either complete the run
with no tool side effect repeated or refuse with ``UnsafeResumeError`` (a tool
started without a durable result) — never run an effect twice.

The parallel variant's turns each ask for three calls at once (two inspecting
calls around a modifying one, the barrier), so kills land inside batches:
every call ends with exactly one result, and none runs twice.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from avo.events import EventType, RunLogState, validate_event_append
from avo.exceptions import (
    CheckpointNotFoundError,
    RunAlreadyTerminalError,
    RunNotFoundError,
    UnsafeResumeError,
)
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo_postgres import PostgresEventStore

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import postgres_crasher as crasher  # noqa: E402

TRIALS = 12
SEED = 20261202


async def _writes_of_a_clean_run(store: PostgresEventStore, effects: Path, prefix: str) -> int:
    """How many store writes the crasher's run makes when nothing kills it."""
    counting = crasher.KillAround(store, kill_at=0, after=False)
    run_id = f"{prefix}clean"
    runtime = AgentRuntime(
        provider=FakeProvider(crasher.script(run_id)),
        tools=crasher.tools(str(effects), run_id),
        event_store=counting,  # type: ignore[arg-type]
    )
    result = await runtime.run("crash test", run_id=run_id)
    assert result.status.value == "completed"
    return counting.writes


def _run_children(dsn: str, schema: str, plans: list[tuple[str, int, str]], effects: Path) -> None:
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "postgres_crasher.py"),
                dsn,
                schema,
                run_id,
                str(effects),
                str(kill_at),
                when,
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        for run_id, kill_at, when in plans
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        # -9: killed as planned; 0: the run made fewer writes than the kill point.
        assert proc.returncode in (-9, 0), f"child failed: {err[-2000:]}"


@pytest.mark.parametrize("prefix", ["", "par-"], ids=["one-call-turns", "parallel-turns"])
async def test_sigkill_at_random_points_then_resume(
    pg_schema: tuple[str, str], tmp_path: Path, prefix: str
) -> None:
    dsn, schema = pg_schema
    effects = tmp_path / "effects.txt"
    effects.touch()
    async with PostgresEventStore(dsn, schema=schema) as store:
        # Migrates once before the children race to.
        total_writes = await _writes_of_a_clean_run(store, tmp_path / "clean.txt", prefix)
    rng = random.Random(SEED)
    plans = [
        (f"{prefix}crash-{i}", rng.randint(1, total_writes), rng.choice(["before", "after"]))
        for i in range(TRIALS)
    ]
    await asyncio.to_thread(_run_children, dsn, schema, plans, effects)

    outcomes: Counter[str] = Counter()
    async with PostgresEventStore(dsn, schema=schema) as store:
        for run_id, kill_at, when in plans:
            trial = f"{run_id} (killed {when} write {kill_at})"
            events = await store.get_events(run_id)
            log = RunLogState(run_id=run_id)
            for stored in events:  # the log left by the crash is a valid one
                validate_event_append(log, stored)
                log.apply(stored)
            assert [e.sequence for e in events] == list(range(1, len(events) + 1)), trial
            runtime = AgentRuntime(
                provider=FakeProvider(crasher.script(run_id)),
                tools=crasher.tools(str(effects), run_id),
                event_store=store,
            )
            finished = False
            try:
                result = await runtime.resume(run_id)
            except UnsafeResumeError:
                outcomes["refused: tool started without a durable result"] += 1
                assert log.open_tool_calls, trial
            except CheckpointNotFoundError:
                outcomes["refused: no checkpoint yet"] += 1
            except RunNotFoundError:
                outcomes["refused: run never created"] += 1
                assert events == [], trial
            except RunAlreadyTerminalError:
                outcomes["already finished"] += 1
            else:
                outcomes["resumed to completion"] += 1
                assert result.status.value == "completed", trial
                after = await store.get_events(run_id)
                completed = [e for e in after if e.event_type is EventType.TOOL_COMPLETED]
                assert len(completed) == crasher.calls_of(run_id), trial
                # every call has exactly one result, under the kernel's own id
                ids = [e.payload["tool_call_id"] for e in completed]
                assert len(set(ids)) == len(ids), trial
                finished = True
            # Never a repeated side effect, resumed or not.
            lines = Counter(line for line in effects.read_text().splitlines())
            mine = {call: n for call, n in lines.items() if call.startswith(f"{run_id}-")}
            assert all(n == 1 for n in mine.values()), f"{trial}: effect repeated {mine}"
            if finished:  # and never a lost one: every call's effect happened
                assert len(mine) == crasher.calls_of(run_id), f"{trial}: a call never ran"
    assert outcomes["resumed to completion"] >= 1, outcomes
