"""SQLite-specific behaviour: group commit, a free event loop, flat checkpoint growth."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, LoopPolicy, ModelResponse, ToolCall
from avo.events import EventType
from avo.testing.stores import event, start_run
from avo_sqlite import SQLiteEventStore
from avo_sqlite._codec import decode_type


def _committed_events(path: Path, run_id: str) -> list[str]:
    """What another connection sees (committed rows only)."""
    conn = sqlite3.connect(path)
    try:
        key = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if key is None:
            return []
        low = key[0] << 32
        rows = conn.execute(
            "SELECT event_type FROM events WHERE event_key BETWEEN ? AND ? ORDER BY event_key",
            (low, low + 2**32 - 1),
        ).fetchall()
        return [decode_type(row[0]).value for row in rows]
    finally:
        conn.close()


async def test_tool_boundaries_commit_before_returning(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path, commit_delay=3600) as store:  # only barriers commit
        run_id = await start_run(store)
        assert _committed_events(path, run_id) == ["run_created"]  # state changes are buffered
        await store.append_event(event(run_id, EventType.TOOL_STARTED, tool_call_id="c1"))
        committed = _committed_events(path, run_id)
        assert committed[-1] == "tool_started" and len(committed) == 5
        await store.append_event(event(run_id, EventType.MODEL_REQUESTED))
        assert len(_committed_events(path, run_id)) == 5
        await store.flush()
        assert len(_committed_events(path, run_id)) == 6
        await store.append_event(event(run_id, EventType.MODEL_REQUESTED))
    assert len(_committed_events(path, run_id)) == 7  # close flushes


async def test_commit_delay_zero_commits_every_write(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path, commit_delay=0) as store:
        run_id = await start_run(store)
        assert len(_committed_events(path, run_id)) == 4


async def test_a_blocked_write_does_not_block_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path, commit_delay=0) as store:
        run_id = await start_run(store)
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            append = asyncio.create_task(
                store.append_event(event(run_id, EventType.MODEL_REQUESTED))
            )
            ticks = 0
            while ticks < 20:  # the loop keeps running while the append waits for the lock
                await asyncio.sleep(0.001)
                ticks += 1
            assert not append.done()
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        stored = await append
        assert stored.sequence == 5


class _Args(BaseModel):
    n: int


async def test_checkpoint_rows_stay_flat_as_the_run_grows(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    steps = 40
    script = [
        ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": i})) for i in range(steps)
    ]
    tool = FunctionTool(
        name="echo", description="echo", arguments_model=_Args, function=lambda a: {"n": a.n}
    )
    async with SQLiteEventStore(path) as store:
        runtime = AgentRuntime(
            provider=FakeProvider([*script, ModelResponse(content="done")]),
            tools=[tool],
            event_store=store,
            policy=LoopPolicy(max_steps=steps + 2),
        )
        result = await runtime.run("grow")
        checkpoint = await store.get_latest_checkpoint(result.run_id)
    assert checkpoint is not None and len(checkpoint.messages) == 2 * steps + 2
    conn = sqlite3.connect(path)
    heads = [len(row[0]) for row in conn.execute("SELECT head FROM checkpoints ORDER BY 1")]
    items = conn.execute("SELECT base, COUNT(*) FROM checkpoint_items GROUP BY base").fetchall()
    conn.close()
    # Heads do not grow with the run (the step counters only add digits) ...
    assert max(heads[-10:]) <= max(heads[:10]) + 40, heads
    # ... and every item is written once: the lineages never restart.
    by_base = dict(items)
    assert set(by_base) <= {1, 2, 3}, by_base
    lineage_rows = sum(by_base.values())
    assert lineage_rows < 8 * steps, lineage_rows


def test_codec_round_trips_ids_and_types() -> None:
    from avo.events import EventType as Kind
    from avo_sqlite._codec import decode_id, encode_id, encode_type

    canonical = "6f1c1a70-5a8e-4c1e-9a55-7a3b1f2f9b10"
    for text in (canonical, "call-1", canonical.upper()):
        assert decode_id(encode_id(text)) == text
    assert isinstance(encode_id("6f1c1a70-5a8e-4c1e-9a55-7a3b1f2f9b10"), bytearray)
    for kind in Kind:
        assert decode_type(encode_type(kind)) is kind


def test_sliding_window_shift_detection() -> None:
    from avo_sqlite._checkpoints import _shift

    assert _shift([1, 2, 3], [1, 2, 3, 4]) == 0
    assert _shift([1, 2, 3], [2, 3, 4]) == 1
    assert _shift([1, 1, 2], [1, 2, 5]) == 1
    assert _shift([1, 2, 3], [3, 9]) == 2
    assert _shift([1, 2, 3], [2, 9, 3]) is None
    assert _shift([1, 2, 3], []) is None
    assert _shift([], [7]) == 0


async def test_a_runtime_drives_a_leased_run_only_through_its_lease(tmp_path: Path) -> None:
    import pytest

    from avo.exceptions import LeaseError

    async with SQLiteEventStore(tmp_path / "avo.db") as store:
        run_id = "leased-run"
        lease = await store.acquire_lease(run_id, "worker-a", 30)
        intruder = AgentRuntime(
            provider=FakeProvider([ModelResponse(content="no")]), event_store=store
        )
        with pytest.raises(LeaseError, match="worker-a"):
            await intruder.run("task", run_id=run_id)
        assert await store.get_events(run_id) == []
        holder = AgentRuntime(
            provider=FakeProvider([ModelResponse(content="yes")]), event_store=store.fenced(lease)
        )
        result = await holder.run("task", run_id=run_id)
        assert result.status.value == "completed" and result.output == "yes"
        with pytest.raises(LeaseError):
            await store.acquire_lease(run_id, "worker-b", 30)
        await store.release_lease(lease)
        assert (await store.acquire_lease(run_id, "worker-b", 30)).token == lease.token + 1


async def test_a_refused_write_keeps_the_buffered_ones(tmp_path: Path) -> None:
    import pytest

    from avo.exceptions import EventInvariantError, StorageError
    from avo.state import RunState
    from avo.testing.stores import checkpoint, checkpointed, moved

    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path, commit_delay=3600) as store:
        run_id = await start_run(store)
        await store.append_event(event(run_id, EventType.MODEL_REQUESTED))  # buffered
        bad = checkpoint(run_id).model_copy(update={"user_state": {"x": object()}})
        with pytest.raises(StorageError, match="not JSON"):
            await store.save_checkpoint(bad, checkpointed(run_id, bad))
        with pytest.raises(EventInvariantError):
            await store.append_event(moved(run_id, RunState.CREATED, RunState.FAILED))
        await store.flush()
        assert _committed_events(path, run_id)[-1] == "model_requested"
        assert len(_committed_events(path, run_id)) == 5
        assert await store.get_latest_checkpoint(run_id) is None
        ok = await store.append_event(event(run_id, EventType.MODEL_REQUESTED))
        assert ok.sequence == 6


async def test_leases_hold_across_connections(tmp_path: Path) -> None:
    import pytest

    from avo.exceptions import LeaseError

    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as first, SQLiteEventStore(path) as second:
        run_id = await start_run(first)
        stale = await first.acquire_lease(run_id, "worker-a", 0.05)
        with pytest.raises(LeaseError, match="worker-a"):
            await second.acquire_lease(run_id, "worker-b", 30)
        with pytest.raises(LeaseError):
            await second.append_event(event(run_id, EventType.MODEL_REQUESTED))
        await asyncio.sleep(0.15)  # worker-a's lease expires, worker-b takes over
        fresh = await second.acquire_lease(run_id, "worker-b", 30)
        with pytest.raises(LeaseError, match="fenced off"):
            await first.fenced(stale).append_event(event(run_id, EventType.MODEL_REQUESTED))
        stored = await second.fenced(fresh).append_event(event(run_id, EventType.MODEL_REQUESTED))
        assert stored.sequence == 5
        await second.flush()  # group commit: make it visible to the other connection
        assert [e.sequence for e in await first.get_events(run_id)] == [1, 2, 3, 4, 5]


async def test_cancelling_a_run_at_any_point_ends_it_cancelled(tmp_path: Path) -> None:
    """A store call is atomic for its caller: a cancellation lands before a call (which
    then stores nothing) or, while a write is in flight on the worker thread, is
    re-delivered after the call returns, so the runtime's view of the log never falls
    behind the store (which would make its CANCELLED transition illegal)."""
    import random

    from avo.events import RunLogState, validate_event_append

    rng = random.Random(7)
    script = [ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": i})) for i in range(15)]
    tool = FunctionTool(
        name="echo", description="echo", arguments_model=_Args, function=lambda a: {"n": a.n}
    )
    async with SQLiteEventStore(tmp_path / "avo.db") as store:
        for _ in range(25):
            runs_before = len(await store.list_runs())
            runtime = AgentRuntime(
                provider=FakeProvider([*script, ModelResponse(content="done")]),
                tools=[tool],
                event_store=store,
                policy=LoopPolicy(max_steps=20),
            )
            task = asyncio.create_task(runtime.run("cancel me"))
            for _ in range(rng.randrange(1, 120)):
                await asyncio.sleep(0)
            task.cancel()
            try:
                result = await task  # never an EventInvariantError
            except asyncio.CancelledError:
                # cancelled before create_run wrote anything: no run, nothing stored
                assert len(await store.list_runs()) == runs_before
                continue
            assert result.status.value in ("cancelled", "completed"), result
            events = await store.get_events(result.run_id)
            state = RunLogState(run_id=result.run_id)
            for stored in events:
                validate_event_append(state, stored)
                state.apply(stored)
            assert state.terminal


async def test_checks_cached_between_writes_see_another_connection(tmp_path: Path) -> None:
    """Lease and sequence checks are skipped while PRAGMA data_version shows no other
    writer; a commit by another connection (a lease taken, events appended) is seen."""
    import pytest

    from avo.exceptions import LeaseError

    path = tmp_path / "avo.db"
    async with (
        SQLiteEventStore(path, commit_delay=0) as first,
        SQLiteEventStore(path, commit_delay=0) as second,
    ):
        run_id = await start_run(first)
        run = await first.get_run(run_id)
        assert run is not None
        await first.append_batch(run, [event(run_id, EventType.MODEL_REQUESTED)])  # checks cached
        await second.append_event(event(run_id, EventType.MODEL_REQUESTED))  # sequence 6
        stored = await first.append_batch(run, [event(run_id, EventType.MODEL_REQUESTED)])
        assert [e.sequence for e in stored] == [7]
        lease = await second.acquire_lease(run_id, "worker-b", 30)
        with pytest.raises(LeaseError, match="worker-b"):
            await first.append_batch(run, [event(run_id, EventType.MODEL_REQUESTED)])
        done = await second.fenced(lease).append_batch(
            run, [event(run_id, EventType.MODEL_REQUESTED)]
        )
        assert [e.sequence for e in done] == [8]
        assert [e.sequence for e in await first.get_events(run_id)] == list(range(1, 9))


async def test_a_changed_created_at_still_reaches_the_listing_order(tmp_path: Path) -> None:
    """Head updates leave created_at out of the UPDATE only while it is unchanged."""
    from datetime import timedelta

    from avo.models import replaced

    async with SQLiteEventStore(tmp_path / "avo.db") as store:
        first = await start_run(store)
        second = await start_run(store)
        assert [run.run_id for run in await store.list_runs()] == [second, first]
        head = await store.get_run(first)
        assert head is not None
        moved = replaced(head, created_at=head.created_at + timedelta(days=1))
        await store.update_run(moved)
        assert [run.run_id for run in await store.list_runs()] == [first, second]
        stored = await store.get_run(first)
        assert stored is not None and stored.created_at == moved.created_at
    async with SQLiteEventStore(tmp_path / "avo.db") as reopened:  # the column, not a cache
        assert [run.run_id for run in await reopened.list_runs()] == [first, second]


async def test_a_run_that_never_waits_still_lets_other_tasks_run(tmp_path: Path) -> None:
    """A fake model and a synchronous tool never await I/O; the store's calls still give
    the event loop to other tasks."""

    class Args(BaseModel):
        n: int

    class Counting(SQLiteEventStore):
        batches = 0

        async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
            stored = await super().append_batch(run, events, checkpoint)
            self.batches += 1
            return stored

    tool = FunctionTool(
        name="echo",
        description="echo n",
        arguments_model=Args,
        function=lambda a: {"n": a.n},
        run_in_thread=False,
    )
    steps = 300
    script = [
        ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": i})) for i in range(steps)
    ]
    seen: set[int] = set()  # how many batches were written each time the other task ran
    running = True

    async with Counting(tmp_path / "avo.db") as store:

        async def other_task() -> None:
            while running:
                seen.add(store.batches)
                await asyncio.sleep(0)

        runtime = AgentRuntime(
            provider=FakeProvider([*script, ModelResponse(content="done")]),
            tools=[tool],
            policy=LoopPolicy(max_steps=steps + 5, repeated_action_limit=steps + 5),
            event_store=store,
        )
        task = asyncio.create_task(other_task())
        result = await runtime.run("go")
        running = False
        await task
    assert result.status.value == "completed"
    # the other task ran between batches (without the store's turns: only while a
    # call waited for the worker thread, once or twice a run)
    assert len(seen) >= steps, len(seen)


async def test_runtime_batches_leave_the_cached_summary_equal_to_the_stored_log(
    tmp_path: Path,
) -> None:
    """Runtime batches (ValidatedBatch) are folded in, not re-validated: same summary."""
    from avo.events import RunLogState

    class Args(BaseModel):
        n: int

    tool = FunctionTool(
        name="echo", description="echo n", arguments_model=Args, function=lambda a: {"n": a.n}
    )
    script = [ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": i})) for i in range(3)]
    async with SQLiteEventStore(tmp_path / "avo.db") as store:
        runtime = AgentRuntime(
            provider=FakeProvider([*script, ModelResponse(content="done")]),
            tools=[tool],
            event_store=store,
        )
        result = await runtime.run("go")
        events = await store.get_events(result.run_id)
        cached = store._core._states[result.run_id]
    assert result.status.value == "completed"
    assert cached == RunLogState.from_events(result.run_id, events)
