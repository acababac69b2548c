"""Pipelined batches: staged on the loop thread while a commit holds the connection.

Real SQLite files and the store's real worker thread. To hold "a commit in
flight" for as long as a test needs, the worker is given a call that waits on
a gate and the store treats it as its in-flight commit (the done callback is
the group's own bookkeeping: the connection is free, staged batches go).
Failures are real SQLite failures (a trigger that aborts an insert, a
deferred foreign key that fails the commit) or a real lease taken over by
another connection.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from avo.events import AgentEvent, EventType
from avo.exceptions import LeaseError, StorageError
from avo.models import Checkpoint, RunRecord
from avo.testing.stores import checkpoint, checkpointed, event, start_run
from avo_sqlite import SQLiteEventStore


def _committed_last(path: Path, run_id: str) -> int:
    """The run's last sequence as another connection sees it (committed rows only)."""
    conn = sqlite3.connect(path)
    try:
        key = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        low = key[0] << 32
        row = conn.execute(
            "SELECT MAX(event_key) FROM events WHERE event_key BETWEEN ? AND ?",
            (low, low + 2**32 - 1),
        ).fetchone()
        return 0 if row[0] is None else int(row[0]) - low
    finally:
        conn.close()


def _batch(run_id: str, call: str, cp: Checkpoint | None = None) -> list[AgentEvent]:
    events = [
        event(run_id, EventType.MODEL_REQUESTED, call=call),
        event(run_id, EventType.TOOL_STARTED, tool_call_id=call, name="echo", arguments={}),
    ]
    if cp is not None:
        events.append(checkpointed(run_id, cp))
    return events


async def _head(store: Any, run_id: str) -> RunRecord:
    run = await store.get_run(run_id)
    assert run is not None
    return run


async def _warm(store: SQLiteEventStore, count: int) -> list[str]:
    """Runs whose caches are warm (log summary, lease check, checkpoint cursor)."""
    run_ids = [await start_run(store) for _ in range(count)]
    for run_id in run_ids:
        cp = checkpoint(run_id, next_step=1)
        await store.append_batch(await _head(store, run_id), _batch(run_id, "w", cp), cp)
    await store.flush()
    return run_ids


class Gate:
    """Holds the store's worker as if a commit were in flight, until opened."""

    made: ClassVar[list[Gate]] = []

    def __init__(self, store: SQLiteEventStore) -> None:
        self._event = threading.Event()
        Gate.made.append(self)
        group = store._group
        flight = asyncio.wrap_future(store._worker.submit(self._event.wait))

        def landed(_: object) -> None:  # the group's own bookkeeping of a landed commit
            group.in_flight = None
            group._settle()
            group._kick()

        flight.add_done_callback(landed)
        group.in_flight = flight
        self.flight = flight

    async def open(self) -> None:
        self._event.set()
        await asyncio.shield(self.flight)


async def _until_staged(store: SQLiteEventStore, count: int) -> None:
    for _ in range(1000):
        pipeline = store._group.pipeline
        if pipeline is not None and len(pipeline.batches) >= count:
            return
        await asyncio.sleep(0)
    for gate in Gate.made:  # let close() finish instead of waiting for a gate forever
        gate._event.set()
    raise AssertionError("the batches were not staged")


async def test_batches_staged_during_a_commit_are_stored_by_the_next_and_only_then_return(
    tmp_path: Path,
) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = await _warm(store, 8)
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        gate = Gate(store)
        cps = {run_id: checkpoint(run_id, next_step=2) for run_id in run_ids}
        writes = [
            asyncio.ensure_future(store.append_batch(heads[r], _batch(r, "c1", cps[r]), cps[r]))
            for r in run_ids
        ]
        await _until_staged(store, len(run_ids))
        assert not any(w.done() for w in writes)  # staged, not durable: nobody returned
        assert all(_committed_last(path, r) == 7 for r in run_ids)
        await gate.open()
        stored = await asyncio.gather(*writes)
        assert store._group.staged >= len(run_ids)
        for run_id, events in zip(run_ids, stored, strict=True):
            assert [e.sequence for e in events] == [8, 9, 10]
            assert _committed_last(path, run_id) == 10  # durable when it returned
            latest = await store.get_latest_checkpoint(run_id)
            assert latest is not None and latest.checkpoint_id == cps[run_id].checkpoint_id
    async with SQLiteEventStore(path) as again:  # a fresh store reads the same
        for run_id in run_ids:
            assert [e.sequence for e in await again.get_events(run_id)][-3:] == [8, 9, 10]
            latest = await again.get_latest_checkpoint(run_id)
            assert latest is not None and latest.next_step == 2


async def test_many_runs_writing_together_keep_every_log_whole(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    runs, rounds = 40, 12
    async with SQLiteEventStore(path) as store:
        run_ids = await _warm(store, runs)

        async def drive(run_id: str) -> None:
            head = await _head(store, run_id)
            for i in range(rounds):
                cp = checkpoint(run_id, next_step=i + 2, fingerprints=[f"f{j}" for j in range(i)])
                stored = await store.append_batch(head, _batch(run_id, f"c{i}", cp), cp)
                assert _committed_last(path, run_id) >= stored[-1].sequence

        await asyncio.gather(*(drive(run_id) for run_id in run_ids))
        assert store._group.staged > 0, "no batch was staged during a commit"
    async with SQLiteEventStore(path) as again:
        for run_id in run_ids:
            events = await again.get_events(run_id)
            assert [e.sequence for e in events] == list(range(1, 8 + 3 * rounds))
            latest = await again.get_latest_checkpoint(run_id)
            assert latest is not None and latest.next_step == rounds + 1
            assert latest.repeated_action_history == [f"f{j}" for j in range(rounds - 1)]


async def test_a_failed_commit_fails_every_staged_batch_and_the_runs_go_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = await _warm(store, 5)
        conn = store._core.conn
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("CREATE TEMP TABLE parent (id INTEGER PRIMARY KEY)")
        conn.execute(
            "CREATE TEMP TABLE child (pid INTEGER REFERENCES parent (id)"
            " DEFERRABLE INITIALLY DEFERRED)"
        )
        conn.execute(
            "CREATE TEMP TRIGGER fails_at_commit AFTER INSERT ON main.events "
            "WHEN NEW.payload LIKE '%doomed%' BEGIN INSERT INTO child VALUES (42); END"
        )
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        gate = Gate(store)

        async def write(run_id: str, doomed: bool) -> list[AgentEvent]:
            batch = _batch(run_id, "c1")
            if doomed:
                batch.append(event(run_id, EventType.MODEL_REQUESTED, note="doomed"))
            return await store.append_batch(heads[run_id], batch)

        writes = [asyncio.ensure_future(write(r, i == 2)) for i, r in enumerate(run_ids)]
        await _until_staged(store, len(run_ids))
        await gate.open()
        results = await asyncio.gather(*writes, return_exceptions=True)
        assert all(isinstance(r, StorageError) for r in results), results
        assert "nothing of that transaction was stored" in str(results[0])
        for run_id in run_ids:
            assert _committed_last(path, run_id) == 7
            assert len(await store.get_events(run_id)) == 7
        conn.execute("DROP TRIGGER fails_at_commit")
        # their cached state (which held the lost batch) was dropped: numbering goes on
        again = await asyncio.gather(
            *(store.append_batch(heads[r], _batch(r, "c1")) for r in run_ids)
        )
        assert all([e.sequence for e in events] == [8, 9] for events in again)
        assert all(_committed_last(path, r) == 9 for r in run_ids)


async def test_a_staged_batch_sqlite_refuses_fails_alone(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = await _warm(store, 4)
        store._core.conn.execute(
            "CREATE TEMP TRIGGER poison BEFORE INSERT ON main.events "
            "WHEN NEW.payload LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END"
        )
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        poisoned = run_ids[1]
        gate = Gate(store)

        async def write(run_id: str) -> list[AgentEvent]:
            batch = _batch(run_id, "c1")
            if run_id == poisoned:
                batch.append(event(run_id, EventType.MODEL_REQUESTED, note="poison"))
            return await store.append_batch(heads[run_id], batch)

        writes = [asyncio.ensure_future(write(r)) for r in run_ids]
        await _until_staged(store, len(run_ids))
        await gate.open()
        results = await asyncio.gather(*writes, return_exceptions=True)
        for run_id, result in zip(run_ids, results, strict=True):
            if run_id == poisoned:
                assert isinstance(result, StorageError) and "poisoned row" in str(result)
                assert _committed_last(path, run_id) == 7
            else:
                assert [e.sequence for e in result] == [8, 9]  # type: ignore[union-attr]
                assert _committed_last(path, run_id) == 9
        store._core.conn.execute("DROP TRIGGER poison")
        again = await store.append_batch(heads[poisoned], _batch(poisoned, "c1"))
        assert [e.sequence for e in again] == [8, 9]


async def test_a_cancelled_staged_batch_is_still_stored_and_the_cancel_delivered(
    tmp_path: Path,
) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = await _warm(store, 3)
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        gate = Gate(store)
        returned: dict[str, list[AgentEvent]] = {}

        async def write(run_id: str) -> None:
            returned[run_id] = await store.append_batch(heads[run_id], _batch(run_id, "c1"))
            await asyncio.sleep(0)  # the cancellation is re-delivered here

        tasks = [asyncio.ensure_future(write(r)) for r in run_ids]
        await _until_staged(store, len(run_ids))
        tasks[0].cancel()
        for _ in range(5):
            await asyncio.sleep(0)
        assert not tasks[0].done()  # it waits for its batch's outcome first
        await gate.open()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[0], asyncio.CancelledError)
        assert run_ids[0] in returned  # the call returned what was stored
        for run_id in run_ids:
            assert _committed_last(path, run_id) == 9
            assert len(await store.get_events(run_id)) == 9


async def test_a_lease_taken_over_while_a_batch_is_staged_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store, SQLiteEventStore(path) as other:
        run_id, bystander = await _warm(store, 2)
        lease = await store.acquire_lease(run_id, "first", ttl=0.2)
        fenced = store.fenced(lease)
        head = await _head(store, run_id)
        await fenced.append_batch(head, _batch(run_id, "c0"))  # the lease check is cached
        calm_head = await _head(store, bystander)
        await store.append_batch(calm_head, _batch(bystander, "c0"))  # (taking a lease reset it)
        await store.flush()
        gate = Gate(store)
        write = asyncio.ensure_future(fenced.append_batch(head, _batch(run_id, "c1")))
        calm = asyncio.ensure_future(store.append_batch(calm_head, _batch(bystander, "c1")))
        await _until_staged(store, 2)
        await asyncio.sleep(0.3)  # the lease expires; another connection takes it over
        taken = await other.acquire_lease(run_id, "second", ttl=30)
        await other.flush()
        await gate.open()
        with pytest.raises(LeaseError, match="fenced off"):
            await write
        assert [e.sequence for e in await calm] == [10, 11]
        assert _committed_last(path, run_id) == 9  # c0 only
        second = other.fenced(taken)
        stored = await second.append_batch(await _head(other, run_id), _batch(run_id, "c1"))
        assert [e.sequence for e in stored] == [10, 11]


async def test_a_read_waiting_for_the_connection_is_not_kept_out_by_staged_batches(
    tmp_path: Path,
) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = await _warm(store, 6)
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        gate = Gate(store)
        writes = [
            asyncio.ensure_future(store.append_batch(heads[r], _batch(r, "c1"))) for r in run_ids
        ]
        await _until_staged(store, len(run_ids))
        read = asyncio.ensure_future(store.get_events(run_ids[0]))
        await asyncio.sleep(0)
        await gate.open()
        assert len(await read) in (7, 9)
        await asyncio.gather(*writes)
        assert all(_committed_last(path, r) == 9 for r in run_ids)
