"""Group commit: many runs' batches share one commit; each caller returns once durable.

Real SQLite files; failures are real SQLite failures (a trigger that aborts an
insert half-way, a deferred foreign key that fails the commit), counted
commits come from SQLite's own trace callback.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from avo.events import AgentEvent, EventType
from avo.exceptions import StorageError
from avo.models import RunRecord
from avo.testing.stores import checkpoint, checkpointed, event, start_run
from avo_sqlite import SQLiteEventStore


def _committed_last(path: Path, run_id: str) -> int:
    """The run's last sequence as another connection sees it (committed rows only)."""
    conn = sqlite3.connect(path)
    try:
        key = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if key is None:
            return 0
        low = key[0] << 32
        row = conn.execute(
            "SELECT MAX(event_key) FROM events WHERE event_key BETWEEN ? AND ?",
            (low, low + 2**32 - 1),
        ).fetchone()
        return 0 if row[0] is None else int(row[0]) - low
    finally:
        conn.close()


def _count_commits(store: SQLiteEventStore) -> list[str]:
    commits: list[str] = []
    store._core.conn.set_trace_callback(
        lambda sql: commits.append(sql) if sql == "COMMIT" else None
    )
    return commits


async def _head(store: SQLiteEventStore, run_id: str) -> RunRecord:
    run = await store.get_run(run_id)
    assert run is not None
    return run


def _tool_batch(run_id: str, call: str) -> list[AgentEvent]:
    """A barrier batch: a tool starts (must be durable before the tool may act)."""
    return [
        event(run_id, EventType.MODEL_REQUESTED, call=call),
        event(run_id, EventType.TOOL_STARTED, tool_call_id=call, name="echo", arguments={}),
    ]


@pytest.mark.parametrize("synchronous", ["NORMAL", "FULL"])
async def test_concurrent_runs_share_commits_and_return_only_when_durable(
    tmp_path: Path, synchronous: str
) -> None:
    path = tmp_path / "avo.db"
    runs, rounds = 20, 10
    async with SQLiteEventStore(path, synchronous=synchronous) as store:
        run_ids = [await start_run(store) for _ in range(runs)]
        await store.flush()
        commits = _count_commits(store)
        not_durable: list[tuple[str, int]] = []

        async def drive(run_id: str) -> None:
            head = await _head(store, run_id)
            for i in range(rounds):
                stored = await store.append_batch(head, _tool_batch(run_id, f"c{i}"))
                # returned: durable, so another connection already sees it
                if _committed_last(path, run_id) < stored[-1].sequence:
                    not_durable.append((run_id, stored[-1].sequence))

        await asyncio.gather(*(drive(run_id) for run_id in run_ids))
    assert not_durable == []
    batches = runs * rounds
    assert len(commits) <= batches // 4, f"{len(commits)} commits for {batches} batches"
    for run_id in run_ids:
        assert _committed_last(path, run_id) == 4 + 2 * rounds


async def test_one_run_alone_commits_each_barrier_at_once(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_id = await start_run(store)
        head = await _head(store, run_id)
        for i in range(5):
            stored = await store.append_batch(head, _tool_batch(run_id, f"c{i}"))
            assert _committed_last(path, run_id) == stored[-1].sequence


async def test_a_batch_failing_half_way_fails_alone(tmp_path: Path) -> None:
    """A real SQLite failure in the middle of one batch's rows rolls back only that batch."""
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = [await start_run(store) for _ in range(6)]
        await store.flush()
        # aborts the insert of a payload marked 'poison' after the batch's first rows went in
        store._core.conn.execute(
            "CREATE TEMP TRIGGER poison BEFORE INSERT ON main.events "
            "WHEN NEW.payload LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END"
        )
        poisoned = run_ids[2]
        commits = _count_commits(store)

        async def drive(run_id: str) -> list[AgentEvent]:
            head = await _head(store, run_id)
            batch = _tool_batch(run_id, "c1")
            if run_id == poisoned:
                batch.append(event(run_id, EventType.MODEL_REQUESTED, note="poison"))
            return await store.append_batch(head, batch)

        results = await asyncio.gather(*(drive(r) for r in run_ids), return_exceptions=True)
        assert isinstance(results[2], StorageError) and "poisoned row" in str(results[2])
        for run_id, result in zip(run_ids, results, strict=True):
            if run_id != poisoned:
                assert isinstance(result, list), result
                assert _committed_last(path, run_id) == 6
        assert _committed_last(path, poisoned) == 4  # nothing of its batch
        assert len(commits) < len(run_ids)  # the others still shared commits
        store._core.conn.execute("DROP TRIGGER poison")
        again = await store.append_batch(await _head(store, poisoned), _tool_batch(poisoned, "c1"))
        assert [e.sequence for e in again] == [5, 6]


async def test_a_failed_commit_fails_every_batch_of_its_group_and_stores_none(
    tmp_path: Path,
) -> None:
    """A commit SQLite refuses (a deferred foreign key): no batch of the group is stored,
    every caller of the group hears it, and the store goes on."""
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = [await start_run(store) for _ in range(5)]
        await store.flush()
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

        async def drive(run_id: str, doomed: bool) -> list[AgentEvent]:
            head = await _head(store, run_id)
            batch = _tool_batch(run_id, "c1")
            if doomed:
                batch.append(event(run_id, EventType.MODEL_REQUESTED, note="doomed"))
            return await store.append_batch(head, batch)

        results = await asyncio.gather(
            *(drive(run_id, i == 1) for i, run_id in enumerate(run_ids)), return_exceptions=True
        )
        assert all(isinstance(r, StorageError) for r in results), results
        assert "nothing of that transaction was stored" in str(results[0])
        for run_id in run_ids:
            assert _committed_last(path, run_id) == 4
            assert len(await store.get_events(run_id)) == 4  # the store's view agrees
        conn.execute("DROP TRIGGER fails_at_commit")
        stored = await store.append_batch(
            await _head(store, run_ids[0]), _tool_batch(run_ids[0], "c1")
        )
        assert [e.sequence for e in stored] == [5, 6]
        assert _committed_last(path, run_ids[0]) == 6


async def test_a_cancelled_waiter_still_gets_its_batch_stored(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = [await start_run(store) for _ in range(4)]
        await store.flush()
        heads = {run_id: await _head(store, run_id) for run_id in run_ids}
        returned: dict[str, Any] = {}

        async def write(run_id: str) -> None:
            try:
                returned[run_id] = await store.append_batch(
                    heads[run_id], _tool_batch(run_id, "c1")
                )
            finally:
                await asyncio.sleep(0)  # the cancellation is re-delivered here

        tasks = [asyncio.create_task(write(run_id)) for run_id in run_ids]
        for _ in range(3):
            await asyncio.sleep(0)
        tasks[0].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        # whether the cancellation landed before the write (nothing stored) or while it
        # waited for its commit (stored, then re-delivered), the log says which
        for run_id, result in zip(run_ids, results, strict=True):
            stored = await store.get_events(run_id)
            if isinstance(result, asyncio.CancelledError) and run_id not in returned:
                assert len(stored) in (4, 6)
            else:
                assert len(stored) == 6
                assert _committed_last(path, run_id) == 6


async def test_every_batch_is_durable_even_an_effect_free_one(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path, commit_delay=3600) as store:
        run_id = await start_run(store)
        cp = checkpoint(run_id)
        head = await _head(store, run_id)
        await store.append_batch(head, [checkpointed(run_id, cp)], cp)  # no tool event in it
        assert _committed_last(path, run_id) == 5


async def test_effect_free_single_writes_are_committed_within_the_delay(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path, commit_delay=0.05) as store:
        run_id = await start_run(store)
        await store.flush()
        await store.append_event(event(run_id, EventType.MODEL_REQUESTED))  # acknowledged
        assert _committed_last(path, run_id) == 4  # not yet committed
        for _ in range(100):  # the worker thread commits it once the delay passed
            await asyncio.sleep(0.01)
            if _committed_last(path, run_id) == 5:
                break
        assert _committed_last(path, run_id) == 5


async def test_a_read_before_the_commit_sees_the_batches_waiting_for_it(tmp_path: Path) -> None:
    """A batch's rows go in with its commit; a call that comes first inserts them first,
    and a batch whose rows SQLite refuses then fails alone, once its commit settles."""
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        opener, first, poisoned = [await start_run(store) for _ in range(3)]
        await store.flush()
        store._core.conn.execute(
            "CREATE TEMP TRIGGER poison BEFORE INSERT ON main.events "
            "WHEN NEW.payload LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END"
        )
        core = store._core
        # stage three batches the way a round does, without their commit: the first
        # begins the transaction (its rows go in at once), the others join it
        heads = [await _head(store, run_id) for run_id in (opener, first, poisoned)]
        core.append_batch(heads[0], _tool_batch(opener, "c1"), None, None)
        staged = core.append_batch(heads[1], _tool_batch(first, "c1"), None, None)
        bad = [*_tool_batch(poisoned, "c1"), event(poisoned, EventType.MODEL_REQUESTED, x="poison")]
        core.append_batch(heads[2], bad, None, None)
        refused = core.write_id
        assert len(core._deferred) == 2
        assert _committed_last(path, first) == 4  # nothing inserted, nothing committed yet
        events = await store.get_events(first)  # this read inserts the waiting rows first
        assert [e.sequence for e in events][-2:] == [e.sequence for e in staged] == [5, 6]
        assert "poisoned row" in str(core.write_errors[refused])
        assert [e.sequence for e in await store.get_events(poisoned)] == [1, 2, 3, 4]
        await store.flush()
        assert _committed_last(path, opener) == _committed_last(path, first) == 6
        assert _committed_last(path, poisoned) == 4
        store._core.conn.execute("DROP TRIGGER poison")
        again = await store.append_batch(await _head(store, poisoned), _tool_batch(poisoned, "c1"))
        assert [e.sequence for e in again] == [5, 6]


def test_a_write_just_after_a_commit_finished_waits_for_it_without_spinning(
    tmp_path: Path,
) -> None:
    """A commit on the worker that finished, its done callback (which clears the store's
    in-flight commit) not run yet: the next write gives the loop a turn instead of
    awaiting the finished future in a loop that never yields (it hung a worker)."""
    import threading

    outcome: list[tuple[int, int]] = []

    async def scenario() -> None:
        async with SQLiteEventStore(tmp_path / "avo.db") as store:
            run_id = await start_run(store)
            await start_run(store)  # the last write is another run's: runs write together
            head = await _head(store, run_id)
            group = store._group
            assert group._last_run != run_id  # grouped: the write takes no turn of its own first
            flight: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            flight.add_done_callback(lambda _: setattr(group, "in_flight", None))
            group.in_flight = flight
            flight.set_result(None)  # finished; the callback runs on the loop's next turn
            stored = await store.append_batch(head, _tool_batch(run_id, "c0"))
            await store.flush()  # the same wait in store.flush()
            outcome.append((stored[-1].sequence, len(await store.get_events(run_id))))

    # In a thread of its own, so a regression fails here instead of hanging the session.
    thread = threading.Thread(target=asyncio.run, args=(scenario(),), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the write spun on a finished commit"
    assert len(outcome) == 1 and outcome[0][0] == outcome[0][1]  # written, all of it


async def test_a_side_store_on_the_loop_thread_does_not_wait_for_its_own_process(
    tmp_path: Path,
) -> None:
    """The token ledger writes synchronously, on the event loop thread (an observer hook).

    When it is called while a group's transaction is open, only this loop thread
    could commit that transaction: the ledger must not wait for it (it used to wait
    out the busy timeout and fail, once per write: a Temporal worker hung on it).
    """
    from avo.models import TokenUsage
    from avo_sqlite import TokenLedger

    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_ids = [await start_run(store) for _ in range(3)]
        await store.flush()
        heads = [await _head(store, run_id) for run_id in run_ids]
        writes = [
            asyncio.ensure_future(store.append_batch(head, _tool_batch(head.run_id, "c1")))
            for head in heads
        ]
        for _ in range(200):  # until a group's transaction is open, waiting for its commit
            await asyncio.sleep(0)
            if store._core.conn.in_transaction and not all(w.done() for w in writes):
                break
        assert store._core.conn.in_transaction, "no open group transaction was seen"
        with TokenLedger(path) as ledger:  # on this (the loop) thread, synchronously
            ledger.record(run_ids[0], step=1, usage=TokenUsage(input_tokens=7))
        stored = await asyncio.gather(*writes)
        for run_id, batch in zip(run_ids, stored, strict=True):
            assert _committed_last(path, run_id) >= batch[-1].sequence
        with TokenLedger(path) as ledger:
            assert ledger.total(run_ids[0]).input_tokens == 7
