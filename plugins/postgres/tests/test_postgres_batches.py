"""append_batch on a real server beyond the shared suite: round trips, racing hosts, stale heads."""

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

from avo.events import AgentEvent, EventType, RunLogState, validate_event_append
from avo.exceptions import EventInvariantError
from avo.models import RunRecord
from avo.state import RunState
from avo.testing.stores import checkpoint, checkpointed, event, moved, start_run
from avo_postgres import PostgresEventStore

pytestmark = pytest.mark.postgres

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import postgres_batcher as batcher  # noqa: E402


async def _head(store: PostgresEventStore, run_id: str, **updates: Any) -> RunRecord:
    run = await store.get_run(run_id)
    assert run is not None
    return run.model_copy(update=updates)


def _step(run_id: str, call_id: str, n: int) -> tuple[list[AgentEvent], list[AgentEvent], Any]:
    """The runtime's two batches of one tool step (before the tool; before the next model call)."""
    s = RunState
    before_tool_cp = checkpoint(run_id, state=s.DECISION_RECEIVED, next_step=n)
    call = {"tool_call_id": call_id, "name": "echo", "arguments": {"n": n}}
    before_tool = [
        checkpointed(run_id, before_tool_cp),
        event(run_id, EventType.TOOL_REQUESTED, **call),
        moved(run_id, s.DECISION_RECEIVED, s.TOOL_PENDING),
        event(run_id, EventType.TOOL_APPROVAL_REQUESTED, **call),
        moved(run_id, s.TOOL_PENDING, s.APPROVAL_PENDING),
        event(run_id, EventType.TOOL_APPROVED, tool_call_id=call_id),
        moved(run_id, s.APPROVAL_PENDING, s.TOOL_EXECUTING),
        event(run_id, EventType.TOOL_STARTED, **call),
    ]
    after_cp = checkpoint(run_id, state=s.OBSERVATION_RECORDED, next_step=n, completed={call_id})
    after_tool = [
        event(run_id, EventType.TOOL_COMPLETED, tool_call_id=call_id, name="echo", success=True),
        moved(run_id, s.TOOL_EXECUTING, s.OBSERVATION_RECORDED),
        checkpointed(run_id, after_cp),
        moved(run_id, s.OBSERVATION_RECORDED, s.MODEL_PENDING),
    ]
    return before_tool, after_tool, (before_tool_cp, after_cp)


def _model_turn(run_id: str, n: int) -> list[AgentEvent]:
    s = RunState
    return [
        event(run_id, EventType.MODEL_REQUESTED, step=n),
        event(run_id, EventType.MODEL_RESPONDED, step=n, response={}, duration_ms=1.0),
        moved(run_id, s.MODEL_PENDING, s.DECISION_RECEIVED),
    ]


class _Statements:
    """Counts the statements a one-connection store sends (asyncpg's query logger).

    Once asyncpg has a statement prepared (its per-connection cache), one
    statement is one round trip: Bind, Execute and Sync go out together.
    """

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, record: Any) -> None:
        self.sent.append(record.query)

    async def attach(self, conn: Any) -> None:
        """The store's ``connection_init``: log every pooled connection's statements."""
        conn.add_query_logger(self)


async def test_a_tool_step_costs_two_round_trips(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    statements = _Statements()
    async with PostgresEventStore(
        dsn, schema=schema, pool_max_size=1, connection_init=statements.attach
    ) as store:
        run_id = await start_run(store)
        for n in range(1, 4):
            before_tool, after_tool, (cp1, cp2) = _step(run_id, f"call-{n}", n)
            statements.sent.clear()
            await store.append_batch(await _head(store, run_id, steps=n), before_tool, cp1)
            await store.append_batch(await _head(store, run_id, steps=n), after_tool, cp2)
            writes = [q for q in statements.sent if not q.startswith("SELECT record FROM")]
            if n > 1:  # the first step also introspects types for asyncpg's statement cache
                assert len(writes) == 2, writes  # one statement per batch, checkpoint included
            await store.append_batch(await _head(store, run_id), _model_turn(run_id, n + 1))
        events = await store.get_events(run_id)
        assert [e.sequence for e in events] == list(range(1, 4 + 3 * 15 + 1))
        assert await store.get_latest_checkpoint(run_id) == cp2

    # A cold instance (e.g. after a crash) reads the head once, then is back to one statement.
    statements = _Statements()
    async with PostgresEventStore(
        dsn, schema=schema, pool_max_size=1, connection_init=statements.attach
    ) as cold:
        before_tool, after_tool, (cp1, cp2) = _step(run_id, "call-9", 9)
        head = await _head(cold, run_id, steps=9)
        statements.sent.clear()
        await cold.append_batch(head, before_tool, cp1)
        assert len(statements.sent) > 1  # the run row and the previous checkpoint
        await cold.append_batch(head, after_tool, cp2)  # prepares the group statement once
        statements.sent.clear()
        await cold.append_batch(await _head(cold, run_id), _model_turn(run_id, 10))
        writes = [q for q in statements.sent if not q.startswith("SELECT record FROM")]
        assert len(writes) == 1, writes
        assert await cold.get_latest_checkpoint(run_id) == cp2


async def test_a_batch_is_validated_against_what_another_host_wrote(
    pg_schema: tuple[str, str],
) -> None:
    dsn, schema = pg_schema
    async with (
        PostgresEventStore(dsn, schema=schema) as host_a,
        PostgresEventStore(dsn, schema=schema) as host_b,
    ):
        run_id = await start_run(host_a)
        before_tool, after_tool, (cp1, cp2) = _step(run_id, "c1", 1)
        head = await _head(host_a, run_id, steps=1)
        await host_a.append_batch(head, before_tool, cp1)
        # Host B finishes the tool call; host A's view of the run is now stale.
        await host_b.append_batch(head, after_tool, cp2)
        with pytest.raises(EventInvariantError):  # c1 already has its result
            await host_a.append_batch(head, after_tool[:1])
        with pytest.raises(EventInvariantError):  # the run is no longer TOOL_EXECUTING
            await host_a.append_batch(head, after_tool[1:2])
        stored = await host_a.append_batch(head, _model_turn(run_id, 2))
        assert [e.sequence for e in stored] == [17, 18, 19]
        events = await host_b.get_events(run_id)
        assert [e.sequence for e in events] == list(range(1, 20))
        # Host A's next checkpoint builds on host B's, not on the one it cached.
        cp3 = checkpoint(run_id, next_step=3, completed={"c1", "c2"})
        await host_a.append_batch(head, [checkpointed(run_id, cp3)], cp3)
        assert await host_b.get_latest_checkpoint(run_id) == cp3


async def test_racing_processes_never_interleave_or_gap_a_batch(
    pg_schema: tuple[str, str],
) -> None:
    import asyncpg

    dsn, schema = pg_schema
    workers, batches = 4, 30
    async with PostgresEventStore(dsn, schema=schema) as store:
        run_id = await start_run(store)

    def args(me: int) -> list[str]:
        return [str(me), str(batches)]

    gate = await asyncpg.connect(dsn)
    await gate.execute("SELECT pg_advisory_lock($1)", batcher.START_LOCK)
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, str(HERE / "postgres_batcher.py"), dsn, schema, run_id, *args(me)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for me in range(workers)
        ]
        for proc in procs:  # every process is connected and waiting on the gate
            assert proc.stdout is not None
            line = await asyncio.to_thread(proc.stdout.readline)
            assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    finally:
        await gate.execute("SELECT pg_advisory_unlock($1)", batcher.START_LOCK)
        await gate.close()
    acked: set[tuple[str, int]] = set()
    for proc in procs:
        out, err = await asyncio.to_thread(proc.communicate, timeout=120)
        assert proc.returncode == 0, err[-3000:]
        acked |= {(event_id, sequence) for event_id, sequence in json.loads(out)}

    async with PostgresEventStore(dsn, schema=schema) as store:
        events = await store.get_events(run_id)
        head = await store.get_run(run_id)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    log = RunLogState(run_id=run_id)
    for stored in events:
        validate_event_append(log, stored)
        log.apply(stored)
    raced = events[4:]
    assert {(e.event_id, e.sequence) for e in raced} == acked  # nothing lost, nothing extra
    batched = [e for e in raced if "k" in e.payload]
    sizes = Counter((e.payload["worker"], e.payload["b"]) for e in batched)
    assert len(sizes) == workers * batches
    for (worker, b), size in sizes.items():  # each batch landed whole, in order, contiguous
        seqs = [e.sequence for e in batched if (e.payload["worker"], e.payload["b"]) == (worker, b)]
        assert size == 1 + (worker + b) % 4
        assert seqs == list(range(seqs[0], seqs[0] + size))
        ks = [
            e.payload["k"] for e in batched if (e.payload["worker"], e.payload["b"]) == (worker, b)
        ]
        assert ks == list(range(size))
    # The head is the one written by the batch that committed last.
    last = batched[-1].payload
    assert head is not None and head.steps == batcher.batch_number(last["worker"], last["b"])
    # The processes really raced: the log switches between writers many times.
    switches = sum(
        1 for a, b in itertools.pairwise(raced) if a.payload["worker"] != b.payload["worker"]
    )
    assert switches >= workers


async def test_fenced_batches_of_two_tasks_interleave_whole(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    async with (
        PostgresEventStore(dsn, schema=schema) as host_a,
        PostgresEventStore(dsn, schema=schema) as host_b,
    ):
        run_id = await start_run(host_a)
        lease = await host_a.acquire_lease(run_id, "worker-a", 30)
        head = await _head(host_a, run_id)
        writers = [host_a.fenced(lease), host_b.fenced(lease)]  # one lease, two connections

        async def write(who: int) -> None:
            for b in range(10):
                marks = [
                    event(run_id, EventType.MODEL_REQUESTED, who=who, b=b, k=k) for k in range(3)
                ]
                await writers[who].append_batch(head, marks)

        await asyncio.gather(write(0), write(1))
        events = (await host_b.get_events(run_id))[4:]
        assert [e.sequence for e in events] == list(range(5, 5 + 60))
        for chunk in (events[i : i + 3] for i in range(0, len(events), 3)):
            assert [e.payload["k"] for e in chunk] == [0, 1, 2]
            assert len({(e.payload["who"], e.payload["b"]) for e in chunk}) == 1
