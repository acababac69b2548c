"""Concurrency proof on a real server: 8 worker processes, 25 agent runs each, one store.

The workers (``postgres_worker.py``, real subprocesses with their own
connection pools, as separate hosts would have) drive real ``AgentRuntime``
runs under leases while hammering shared runs, then race to finalize and to
lease the same runs. Afterwards the database must show: every acknowledged
event present exactly once, per-run sequences 1..n with no gap or duplicate,
every stored log valid under the event invariants, exactly one winner of each
finalize race and of each lease race.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from avo.events import EventType, RunLogState, validate_event_append
from avo.exceptions import LeaseError
from avo.testing.stores import event, start_run
from avo_postgres import PostgresEventStore

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WORKERS = 8
RUNS_PER_WORKER = 25
HOT_RUNS = 2
HOT_ROUNDS = RUNS_PER_WORKER  # one append per hot run after each agent run
RACE_RUNS = 6
LEASE_RUNS = 4
WORKER_SCRIPT = Path(__file__).with_name("postgres_worker.py")


def _assert_valid_log(run_id: str, events: list[Any]) -> None:
    assert [e.sequence for e in events] == list(range(1, len(events) + 1)), run_id
    assert len({e.event_id for e in events}) == len(events), run_id
    log = RunLogState(run_id=run_id)
    for stored in events:
        validate_event_append(log, stored)  # the stored log is one the invariants accept
        log.apply(stored)


async def _prepare(dsn: str, schema: str) -> dict[str, Any]:
    async with PostgresEventStore(dsn, schema=schema) as store:
        hot = [await start_run(store, f"hot-{i}") for i in range(HOT_RUNS)]
        race = [await start_run(store, f"race-{i}") for i in range(RACE_RUNS)]
        lease = [await start_run(store, f"lease-{i}") for i in range(LEASE_RUNS)]
    import asyncpg

    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        await conn.execute(
            "CREATE TABLE test_barrier (name text, worker int, PRIMARY KEY (name, worker))"
        )
    finally:
        await conn.close()
    return {"hot": hot, "hot_rounds": HOT_ROUNDS, "race": race, "lease": lease}


def _run_workers(dsn: str, schema: str, plan: dict[str, Any]) -> list[dict[str, Any]]:
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(WORKER_SCRIPT),
                dsn,
                schema,
                str(me),
                str(WORKERS),
                str(RUNS_PER_WORKER),
                json.dumps(plan),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me in range(WORKERS)
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, f"worker failed:\n{err[-3000:]}"
        reports.append(json.loads(out))
    return reports


async def test_eight_processes_lose_nothing_and_keep_the_invariants(
    pg_schema: tuple[str, str],
) -> None:
    dsn, schema = pg_schema
    plan = await _prepare(dsn, schema)
    reports = await asyncio.to_thread(_run_workers, dsn, schema, plan)

    async with PostgresEventStore(dsn, schema=schema) as store:
        runs = await store.list_runs()
        logs = {run.run_id: await store.get_events(run.run_id) for run in runs}

        # 1. Every agent run finished, and nothing else appeared.
        driven = [r for report in reports for r in report["runs"]]
        assert len(driven) == WORKERS * RUNS_PER_WORKER
        assert all(r["status"] == "completed" for r in driven)
        expected_ids = {r["run_id"] for r in driven} | set(plan["hot"])
        expected_ids |= set(plan["race"]) | set(plan["lease"])
        assert set(logs) == expected_ids

        # 2. No lost, phantom or duplicated event; sequences 1..n; logs valid.
        acked: dict[str, set[tuple[str, int]]] = {}
        for report in reports:
            for run_id, event_id, sequence in report["acked"]:
                acked.setdefault(run_id, set()).add((event_id, sequence))
        for run_id, events in logs.items():
            _assert_valid_log(run_id, events)
        for run in driven:
            stored = {(e.event_id, e.sequence) for e in logs[run["run_id"]]}
            assert stored == acked[run["run_id"]], f"{run['run_id']}: acknowledged != stored"
            assert logs[run["run_id"]][-1].event_type is EventType.RUN_COMPLETED
            kinds = Counter(e.event_type for e in logs[run["run_id"]])
            assert kinds[EventType.TOOL_STARTED] == kinds[EventType.TOOL_COMPLETED] == 2
            assert kinds[EventType.CHECKPOINT_CREATED] >= 2
            checkpoint = await store.get_latest_checkpoint(run["run_id"])
            assert checkpoint is not None and len(checkpoint.completed_tool_call_ids) == 2

        # 3. The shared hot runs got every worker's appends, once each, in one gapless order.
        for run_id in plan["hot"]:
            appended = logs[run_id][4:]
            assert len(appended) == WORKERS * HOT_ROUNDS
            seen = Counter((e.payload["worker"], e.payload["n"]) for e in appended)
            assert set(seen) == {(w, n) for w in range(WORKERS) for n in range(HOT_ROUNDS)}
            assert set(seen.values()) == {1}
            assert {(e.event_id, e.sequence) for e in appended} <= acked[run_id]
            assert len(acked[run_id]) == len(appended)
            # Appends interleaved across workers: a real race, not 8 serial batches.
            switches = sum(
                1
                for a, b in itertools.pairwise(appended)
                if a.payload["worker"] != b.payload["worker"]
            )
            assert switches >= WORKERS

        # 4. Each finalize race: exactly one winner; the rest refused; head agrees with log.
        for run_id in plan["race"]:
            outcomes = Counter(report["finalize"][run_id] for report in reports)
            assert outcomes["won"] == 1, outcomes
            assert set(outcomes) <= {"won", "EventInvariantError", "RunAlreadyTerminalError"}
            winner = next(r["worker"] for r in reports if r["finalize"][run_id] == "won")
            events = logs[run_id]
            terminals = [e for e in events if e.event_type.value.startswith("run_")][1:]
            assert len(terminals) == 1 and events[-1] is terminals[0]
            assert terminals[0].payload["output"] == f"w{winner}"
            record = await store.get_run(run_id)
            assert record is not None and record.output == f"w{winner}"
            assert record.state.value == terminals[0].payload["state"]

        # 5. Each lease race: exactly one worker got the lease and appended; the others'
        #    unleased appends were refused.
        for run_id in plan["lease"]:
            results = [report["lease"][run_id] for report in reports]
            winners = [r for r in results if r["lease"]]
            assert len(winners) == 1, results
            assert all(r["unleased_append"] == "LeaseError" for r in results if not r["lease"])
            appended = logs[run_id][4:]
            assert [e.event_id for e in appended] == [winners[0]["event_id"]]


async def test_stale_lease_holder_that_wakes_up_cannot_append(pg_schema: tuple[str, str]) -> None:
    """Two workers (separate stores, separate connections) and a stale one that wakes up."""
    dsn, schema = pg_schema
    async with (
        PostgresEventStore(dsn, schema=schema) as host_a,
        PostgresEventStore(dsn, schema=schema) as host_b,
    ):
        run_id = await start_run(host_a)
        stale = await host_a.acquire_lease(run_id, "worker-a", 1.0)
        writer_a = host_a.fenced(stale)
        await writer_a.append_event(event(run_id, EventType.MODEL_REQUESTED, by="a"))
        with pytest.raises(LeaseError, match="leased by 'worker-a'"):
            await host_b.acquire_lease(run_id, "worker-b", 30)
        await asyncio.sleep(1.3)  # worker A stalls past its lease ...
        fresh = await host_b.acquire_lease(run_id, "worker-b", 30)
        assert fresh.token > stale.token
        writer_b = host_b.fenced(fresh)
        # ... and wakes up while B drives the run: A's writes race B's, all of A's lose.
        results = await asyncio.gather(
            *(
                writer_a.append_event(event(run_id, EventType.MODEL_REQUESTED, by="a"))
                for _ in range(5)
            ),
            *(
                writer_b.append_event(event(run_id, EventType.MODEL_REQUESTED, by="b"))
                for _ in range(5)
            ),
            return_exceptions=True,
        )
        assert all(isinstance(r, LeaseError) for r in results[:5])
        assert "stale" in str(results[0])
        assert not any(isinstance(r, BaseException) for r in results[5:])
        with pytest.raises(LeaseError):  # nor may it sneak in without the lease
            await host_a.append_event(event(run_id, EventType.MODEL_REQUESTED, by="a"))
        with pytest.raises(LeaseError):
            await host_a.renew_lease(stale, 30)
        events = await host_b.get_events(run_id)
        assert [e.payload.get("by") for e in events[4:]] == ["a"] + ["b"] * 5
        _assert_valid_log(run_id, events)
