"""Group writes on a real server: many runs' batches in one statement, each run still guarded.

Counted statements come from asyncpg's query logger; "another host" is a
second store instance; failures are real server errors.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from avo.events import AgentEvent, EventType
from avo.exceptions import LeaseError, StorageError
from avo.models import RunRecord
from avo.testing.stores import event, start_run
from avo_postgres import PostgresEventStore

pytestmark = pytest.mark.postgres


class _Statements:
    """The group statements a store sends (asyncpg's query logger on every connection)."""

    def __init__(self) -> None:
        self.groups = 0

    def __call__(self, record: Any) -> None:
        if "FROM unnest(" in record.query and "UPDATE avo_runs AS r" in record.query:
            self.groups += 1

    async def attach(self, conn: Any) -> None:
        conn.add_query_logger(self)


async def _head(store: PostgresEventStore, run_id: str) -> RunRecord:
    run = await store.get_run(run_id)
    assert run is not None
    return run


def _tool_batch(run_id: str, call: str, **extra: Any) -> list[AgentEvent]:
    return [
        event(run_id, EventType.MODEL_REQUESTED, call=call, **extra),
        event(run_id, EventType.TOOL_STARTED, tool_call_id=call, name="echo", arguments={}),
    ]


class _Elsewhere:
    """Another connection, reading what is committed (one query at a time)."""

    def __init__(self, conn: Any, schema: str) -> None:
        self.conn, self.schema, self.lock = conn, schema, asyncio.Lock()

    async def last(self, run_id: str) -> int:
        async with self.lock:
            value = await self.conn.fetchval(
                f'SELECT max(sequence) FROM "{self.schema}".avo_events WHERE run_id = $1', run_id
            )
        return int(value or 0)


async def test_batches_of_many_runs_share_statements_and_are_stored_on_return(
    pg_schema: tuple[str, str],
) -> None:
    dsn, schema = pg_schema
    statements = _Statements()
    runs, rounds = 20, 5
    async with PostgresEventStore(dsn, schema=schema, connection_init=statements.attach) as store:
        run_ids = [await start_run(store) for _ in range(runs)]
        elsewhere = _Elsewhere(await asyncpg.connect(dsn), schema)
        late: list[str] = []

        async def drive(run_id: str) -> None:
            head = await _head(store, run_id)
            for i in range(rounds):
                stored = await store.append_batch(head, _tool_batch(run_id, f"c{i}"))
                # one run looks each time (all of them would stagger the runs' rounds)
                if run_id == run_ids[0] and await elsewhere.last(run_id) < stored[-1].sequence:
                    late.append(run_id)

        try:
            await asyncio.gather(*(drive(run_id) for run_id in run_ids))
        finally:
            await elsewhere.conn.close()
        assert late == []
        assert statements.groups <= runs * rounds // 4, statements.groups
        for run_id in run_ids:
            events = await store.get_events(run_id)
            assert [e.sequence for e in events] == list(range(1, 5 + 2 * rounds))


async def test_a_run_another_host_moved_falls_back_alone(pg_schema: tuple[str, str]) -> None:
    """In one group, a run whose cached head is stale fails its own check; the rest store."""
    dsn, schema = pg_schema
    async with (
        PostgresEventStore(dsn, schema=schema) as store,
        PostgresEventStore(dsn, schema=schema) as other,
    ):
        run_ids = [await start_run(store) for _ in range(4)]
        moved_run = run_ids[1]
        await other.append_event(event(moved_run, EventType.MODEL_REQUESTED, by="other host"))
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        results = await asyncio.gather(
            *(store.append_batch(heads[r], _tool_batch(r, "c1")) for r in run_ids)
        )
        for run_id, stored in zip(run_ids, results, strict=True):
            first = 6 if run_id == moved_run else 5  # renumbered after the other host's event
            assert [e.sequence for e in stored] == [first, first + 1]
            events = await other.get_events(run_id)
            assert [e.sequence for e in events] == list(range(1, first + 2))


async def test_a_bad_batch_fails_alone_when_its_group_statement_fails(
    pg_schema: tuple[str, str],
) -> None:
    """A duplicate event id makes the server refuse the whole statement: every batch then
    retries on its own, and only the bad one fails."""
    dsn, schema = pg_schema
    async with PostgresEventStore(dsn, schema=schema) as store:
        run_ids = [await start_run(store) for _ in range(5)]
        taken = (await store.get_events(run_ids[0]))[0].event_id
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        bad = run_ids[3]

        def batch(run_id: str) -> list[AgentEvent]:
            events = _tool_batch(run_id, "c1")
            if run_id == bad:
                events[0] = events[0].model_copy(update={"event_id": taken})
            return events

        results = await asyncio.gather(
            *(store.append_batch(heads[r], batch(r)) for r in run_ids), return_exceptions=True
        )
        for run_id, result in zip(run_ids, results, strict=True):
            if run_id == bad:
                assert isinstance(result, StorageError), result
                assert len(await store.get_events(run_id)) == 4
            else:
                assert isinstance(result, list), result
                assert len(await store.get_events(run_id)) == 6


async def test_a_stale_lease_in_a_group_is_refused_alone(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    async with PostgresEventStore(dsn, schema=schema) as store:
        run_ids = [await start_run(store) for _ in range(3)]
        leased = run_ids[0]
        stale = await store.acquire_lease(leased, "worker-a", 0.05)
        await asyncio.sleep(0.15)
        await store.acquire_lease(leased, "worker-b", 30)
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        writers: dict[str, Any] = {r: store for r in run_ids}
        writers[leased] = store.fenced(stale)
        results = await asyncio.gather(
            *(writers[r].append_batch(heads[r], _tool_batch(r, "c1")) for r in run_ids),
            return_exceptions=True,
        )
        assert isinstance(results[0], LeaseError), results[0]
        assert all(isinstance(r, list) for r in results[1:]), results
        assert len(await store.get_events(leased)) == 4
