"""The EventStore conformance suite: every store plugin runs it against itself.

Subclass :class:`EventStoreConformance` in a test module (the class name must
start with ``Test`` for pytest to collect it) and say how to open the store::

    from avo.testing.stores import EventStoreConformance
    from my_store import MyStore

    class TestMyStoreConformance(EventStoreConformance):
        async def make_store(self, location):
            return MyStore(location)

``store_location`` is a fixture (default: a fresh file path under
``tmp_path``); override it for a server-backed store (e.g. a DSN with a fresh
schema). ``make_store(location)`` may be called more than once per test with
the same location: a durable store must then show the same data in both
instances (set ``shares_location = False`` for a store that cannot, like the
in-memory one, and those tests are skipped).

The optional capabilities are detected by attribute and their tests skipped
when absent (see ``docs/stores.md``):

- retention: ``async delete_run(run_id) -> bool`` — deletes a *terminal* run
  with its events and checkpoints in one transaction; False when the run does
  not exist; ``StorageError`` for a run that is not terminal;
- leases: ``async acquire_lease(run_id, owner, ttl) -> Lease``,
  ``async renew_lease(lease, ttl) -> Lease``, ``async release_lease(lease)``,
  ``fenced(lease) -> EventStore`` (see :mod:`avo.storage.leases`);
- batches: ``async append_batch(run, events, checkpoint=None) -> list[AgentEvent]``
  (see :class:`avo.storage.base.BatchEventStore`; tests in
  :mod:`avo.testing.store_batches`);
- sessions: the methods of :class:`avo.sessions.SessionStore` (tests in
  :mod:`avo.testing.sessions`, which also checks that every store keeps a
  checkpoint's ``shaper_state``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest

from avo.events import AgentEvent, EventType
from avo.exceptions import (
    EventInvariantError,
    LeaseError,
    RunNotFoundError,
    StorageError,
)
from avo.models import Checkpoint, new_id
from avo.state import RunState, StopReason
from avo.storage.base import EventStore
from avo.testing.sessions import SessionConformance
from avo.testing.store_batches import BatchConformance
from avo.testing.store_hazards import HazardConformance
from avo.testing.store_values import (
    T0,
    checkpoint,
    checkpointed,
    created,
    event,
    finish_run,
    moved,
    responded,
    run_record,
    start_run,
    terminal,
)


def _sequences(events: list[AgentEvent]) -> list[int]:
    return [e.sequence for e in events]


def _types(events: list[AgentEvent]) -> list[EventType]:
    return [e.event_type for e in events]


def _require(store: Any, *names: str) -> None:
    for name in names:
        if not hasattr(store, name):
            pytest.skip(f"{type(store).__name__} has no {name}() (optional capability)")


# ---------------------------------------------------------------- the suite


class EventStoreConformance(BatchConformance, HazardConformance, SessionConformance):
    """The behaviour every EventStore must show. Subclass and implement make_store."""

    shares_location: ClassVar[bool] = True
    """Whether two make_store(location) calls on one location see the same data."""

    async def make_store(self, location: Any) -> EventStore:
        """Open the store under test at ``location``."""
        raise NotImplementedError("subclasses implement make_store(location)")

    async def settle(self, store: EventStore) -> None:
        """Make ``store``'s acknowledged writes visible to other instances.

        A no-op for stores that commit every write; a store that group-commits
        effect-free writes (avo-sqlite) flushes here. Only the tests that read
        through a second instance call it.
        """

    @pytest.fixture
    def store_location(self, tmp_path: Path) -> Any:
        """Where the store lives (a fresh file path by default)."""
        return tmp_path / "conformance.db"

    @pytest.fixture
    async def store(self, store_location: Any) -> AsyncIterator[EventStore]:
        """A fresh store, closed after the test."""
        opened = await self.make_store(store_location)
        try:
            yield opened
        finally:
            await opened.close()

    async def _second(self, location: Any) -> EventStore:
        if not self.shares_location:
            pytest.skip("store does not share data between instances")
        return await self.make_store(location)

    # -- create / read ------------------------------------------------------
    async def test_create_run_round_trips(self, store: EventStore) -> None:
        run_id = new_id()
        record = run_record(run_id, user_state={"a": [1, "ü"]})
        returned = await store.create_run(record, created(run_id))
        assert returned.run_id == run_id
        assert await store.get_run(run_id) == record
        events = await store.get_events(run_id)
        assert _types(events) == [EventType.RUN_CREATED]
        assert _sequences(events) == [1]

    async def test_unknown_run_reads_are_empty(self, store: EventStore) -> None:
        assert await store.get_run("nope") is None
        assert await store.get_events("nope") == []
        assert await store.get_latest_checkpoint("nope") is None
        assert await store.is_terminal_run("nope") is False

    async def test_duplicate_create_is_refused(self, store: EventStore) -> None:
        run_id = await start_run(store)
        with pytest.raises(StorageError):
            await store.create_run(run_record(run_id), created(run_id))
        assert len(await store.get_events(run_id)) == 4

    async def test_create_needs_run_created(self, store: EventStore) -> None:
        run_id = new_id()
        with pytest.raises(EventInvariantError):
            await store.create_run(
                run_record(run_id), moved(run_id, RunState.CREATED, RunState.MODEL_PENDING)
            )
        assert await store.get_run(run_id) is None
        assert await store.get_events(run_id) == []

    async def test_append_to_unknown_run_is_refused(self, store: EventStore) -> None:
        with pytest.raises((RunNotFoundError, StorageError)):
            await store.append_event(moved("ghost", RunState.CREATED, RunState.MODEL_PENDING))
        assert await store.get_events("ghost") == []

    # -- sequences ------------------------------------------------------------
    async def test_sequences_ascend_per_run(self, store: EventStore) -> None:
        first = await start_run(store)
        second = await start_run(store)
        extra = await store.append_event(event(first, EventType.MODEL_REQUESTED, step=2))
        assert extra.sequence == 5
        assert _sequences(await store.get_events(first)) == [1, 2, 3, 4, 5]
        assert _sequences(await store.get_events(second)) == [1, 2, 3, 4]

    async def test_events_after_a_sequence_are_the_logs_tail(self, store: EventStore) -> None:
        _require(store, "get_events_after")  # optional: avo.storage.base.EventTailStore
        run_id = await start_run(store)
        await store.append_event(event(run_id, EventType.MODEL_REQUESTED, step=2))
        everything = await store.get_events(run_id)
        tail = store.get_events_after  # type: ignore[attr-defined]
        for after in (0, 1, 3, 4, 5, 9):
            assert await tail(run_id, after) == [e for e in everything if e.sequence > after]
        assert await tail("nope", 0) == []

    async def test_concurrent_appends_get_unique_gapless_sequences(self, store: EventStore) -> None:
        run_id = await start_run(store)
        stored = await asyncio.gather(
            *(store.append_event(event(run_id, EventType.MODEL_REQUESTED, n=n)) for n in range(40))
        )
        assert sorted(e.sequence for e in stored) == list(range(5, 45))
        events = await store.get_events(run_id)
        assert _sequences(events) == list(range(1, 45))
        assert {e.payload.get("n") for e in events[4:]} == set(range(40))

    async def test_event_fields_round_trip(self, store: EventStore) -> None:
        run_id = await start_run(store)
        parent = (await store.get_events(run_id))[0]
        original = AgentEvent(
            run_id=run_id,
            event_type=EventType.SAVER_APPLIED,
            created_at=T0 + timedelta(microseconds=123456),
            payload={"nested": {"list": [1, 2.5, None, True, "ü"]}, "empty": {}},
            parent_event_id=parent.event_id,
        )
        stored = await store.append_event(original)
        assert stored == original.model_copy(update={"sequence": 5})
        assert (await store.get_events(run_id))[-1] == stored

    # -- invariants on every write path --------------------------------------
    async def test_illegal_transition_is_refused_without_a_gap(self, store: EventStore) -> None:
        run_id = await start_run(store)
        with pytest.raises(EventInvariantError):
            await store.append_event(moved(run_id, RunState.DECISION_RECEIVED, RunState.CREATED))
        with pytest.raises(EventInvariantError):  # from_state must be the current state
            await store.append_event(moved(run_id, RunState.CREATED, RunState.MODEL_PENDING))
        ok = await store.append_event(
            moved(run_id, RunState.DECISION_RECEIVED, RunState.TOOL_PENDING)
        )
        assert ok.sequence == 5
        assert _sequences(await store.get_events(run_id)) == [1, 2, 3, 4, 5]

    async def test_tool_results_need_a_start_and_only_one_result(self, store: EventStore) -> None:
        run_id = await start_run(store)
        with pytest.raises(EventInvariantError):
            await store.append_event(event(run_id, EventType.TOOL_COMPLETED, tool_call_id="c1"))
        await store.append_event(event(run_id, EventType.TOOL_STARTED, tool_call_id="c1"))
        await store.append_event(event(run_id, EventType.TOOL_COMPLETED, tool_call_id="c1"))
        with pytest.raises(EventInvariantError):
            await store.append_event(event(run_id, EventType.TOOL_FAILED, tool_call_id="c1"))
        assert len(await store.get_events(run_id)) == 6

    async def test_second_run_created_is_refused(self, store: EventStore) -> None:
        run_id = await start_run(store)
        with pytest.raises(EventInvariantError):
            await store.append_event(created(run_id))

    async def test_completion_needs_a_model_response(self, store: EventStore) -> None:
        run_id = new_id()
        await store.create_run(run_record(run_id), created(run_id))
        await store.append_event(moved(run_id, RunState.CREATED, RunState.MODEL_PENDING))
        with pytest.raises(EventInvariantError):
            await store.append_event(terminal(run_id, RunState.COMPLETED, StopReason.COMPLETED))
        with pytest.raises(EventInvariantError):  # state / stop reason disagree
            await store.append_event(terminal(run_id, RunState.FAILED, StopReason.MAX_STEPS))
        assert await store.is_terminal_run(run_id) is False

    async def test_append_and_update_is_atomic(self, store: EventStore) -> None:
        run_id = await start_run(store)
        before = await store.get_run(run_id)
        assert before is not None
        changed = before.model_copy(update={"state": RunState.TOOL_PENDING, "steps": 1})
        with pytest.raises(EventInvariantError):
            await store.append_event_and_update_run(
                moved(run_id, RunState.TOOL_PENDING, RunState.APPROVAL_PENDING), changed
            )
        assert await store.get_run(run_id) == before
        stored, run = await store.append_event_and_update_run(
            moved(run_id, RunState.DECISION_RECEIVED, RunState.TOOL_PENDING), changed
        )
        assert stored.sequence == 5
        assert run == changed
        assert await store.get_run(run_id) == changed

    async def test_events_of_another_run_are_refused(self, store: EventStore) -> None:
        run_id = await start_run(store)
        other = await start_run(store)
        run = await store.get_run(run_id)
        assert run is not None
        with pytest.raises(StorageError):
            await store.append_event_and_update_run(
                moved(other, RunState.DECISION_RECEIVED, RunState.TOOL_PENDING), run
            )
        assert len(await store.get_events(run_id)) == 4
        assert len(await store.get_events(other)) == 4

    # -- finalize ------------------------------------------------------------
    async def test_finalize_run_writes_both_events_and_the_head(self, store: EventStore) -> None:
        run_id = await start_run(store)
        state_event, terminal_event = await finish_run(store, run_id)
        assert (state_event.sequence, terminal_event.sequence) == (5, 6)
        assert terminal_event.event_type is EventType.RUN_COMPLETED
        assert await store.is_terminal_run(run_id) is True
        run = await store.get_run(run_id)
        assert run is not None and run.state is RunState.COMPLETED
        with pytest.raises(EventInvariantError):
            await store.append_event(event(run_id, EventType.MODEL_REQUESTED))
        with pytest.raises(EventInvariantError):
            await finish_run(store, run_id)
        assert len(await store.get_events(run_id)) == 6

    async def test_finalize_run_is_atomic(self, store: EventStore) -> None:
        run_id = new_id()
        await store.create_run(run_record(run_id), created(run_id))
        await store.append_event(moved(run_id, RunState.CREATED, RunState.MODEL_PENDING))
        before = await store.get_run(run_id)
        assert before is not None
        failed = before.model_copy(
            update={"state": RunState.FAILED, "stop_reason": StopReason.PROVIDER_ERROR}
        )
        # The state event is legal, the terminal event is not (wrong kind for the state):
        # neither may be stored and the head must not change.
        with pytest.raises(EventInvariantError):
            await store.finalize_run(
                failed,
                moved(run_id, RunState.MODEL_PENDING, RunState.FAILED),
                terminal(run_id, RunState.COMPLETED, StopReason.COMPLETED),
            )
        assert len(await store.get_events(run_id)) == 2
        assert await store.get_run(run_id) == before
        assert await store.is_terminal_run(run_id) is False
        second, third = await store.finalize_run(
            failed,
            moved(run_id, RunState.MODEL_PENDING, RunState.FAILED),
            terminal(run_id, RunState.FAILED, StopReason.PROVIDER_ERROR),
        )
        assert (second.sequence, third.sequence) == (3, 4)
        assert await store.is_terminal_run(run_id) is True

    # -- runs ------------------------------------------------------------------
    async def test_list_runs_newest_first(self, store: EventStore) -> None:
        ids = []
        for minute in (1, 2, 3):
            at = T0 + timedelta(minutes=minute)
            ids.append(await start_run(store, created_at=at, updated_at=at))
        listed = [run.run_id for run in await store.list_runs()]
        assert listed == [ids[2], ids[1], ids[0]]

    async def test_update_run(self, store: EventStore) -> None:
        run_id = await start_run(store)
        run = await store.get_run(run_id)
        assert run is not None
        changed = run.model_copy(update={"user_state": {"note": "x"}, "steps": 3})
        assert await store.update_run(changed) == changed
        assert await store.get_run(run_id) == changed
        with pytest.raises(RunNotFoundError):
            await store.update_run(run_record("missing-run"))

    # -- checkpoints ----------------------------------------------------------
    async def test_checkpoint_round_trips(self, store: EventStore) -> None:
        run_id = await start_run(store)
        assert await store.get_latest_checkpoint(run_id) is None
        cp = checkpoint(run_id, completed={"a", "b"}, fingerprints=["f1", "f2"])
        saved, stored = await store.save_checkpoint(cp, checkpointed(run_id, cp))
        assert stored.sequence == 5
        assert stored.event_type is EventType.CHECKPOINT_CREATED
        assert saved.checkpoint_id == cp.checkpoint_id
        assert await store.get_latest_checkpoint(run_id) == saved

    async def test_checkpoint_with_a_bad_event_is_not_stored(self, store: EventStore) -> None:
        run_id = await start_run(store)
        await finish_run(store, run_id)
        cp = checkpoint(run_id)
        with pytest.raises(EventInvariantError):
            await store.save_checkpoint(cp, checkpointed(run_id, cp))
        assert await store.get_latest_checkpoint(run_id) is None
        assert len(await store.get_events(run_id)) == 6

    async def test_checkpoint_series_round_trips_every_shape_change(
        self, store: EventStore, store_location: Any
    ) -> None:
        """Growing, rewritten, shrinking and re-growing values all read back exactly.

        A store that writes checkpoints as deltas must notice every change that
        is not a pure append (compaction, sliding windows, removed ids).
        """
        run_id = await start_run(store)
        messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
        completed: set[str] = set()
        fingerprints: list[str] = []
        script: list[Any] = [{"content": f"answer {i}", "pad": "x" * 40} for i in range(30)]
        saved: Checkpoint | None = None
        for step in range(1, 13):
            messages = [*messages, {"role": "assistant", "content": f"a{step}", "n": step}]
            messages = [*messages, {"role": "tool", "content": {"step": step}}]
            completed = {*completed, f"call-{step}"}
            fingerprints = [*fingerprints, f"fp{step}"][-4:]  # a sliding window
            if step == 5:  # compaction: the history is rewritten and shorter
                messages = [messages[0], {"role": "user", "content": "summary"}, messages[-1]]
            if step == 8:  # same length, a middle message edited
                messages = [*messages]
                messages[2] = {"role": "user", "content": "edited"}
            if step == 10:  # an id removed, a large dict value replaced
                completed = completed - {"call-1"}
                script = [*script[:-1], {"content": "changed"}]
            cp = checkpoint(
                run_id,
                messages=messages,
                next_step=step + 1,
                completed=completed,
                fingerprints=fingerprints,
                script=script,
            )
            saved, _ = await store.save_checkpoint(cp, checkpointed(run_id, cp))
            latest = await store.get_latest_checkpoint(run_id)
            assert latest == saved, f"checkpoint after step {step} did not round-trip"
        if self.shares_location:
            await self.settle(store)
            other = await self.make_store(store_location)
            try:
                assert await other.get_latest_checkpoint(run_id) == saved
            finally:
                await other.close()

    async def test_checkpoints_of_two_runs_stay_apart(self, store: EventStore) -> None:
        first = await start_run(store)
        second = await start_run(store)
        cp1 = checkpoint(first, messages=[{"role": "user", "content": "one"}])
        cp2 = checkpoint(second, messages=[{"role": "user", "content": "two"}])
        await store.save_checkpoint(cp1, checkpointed(first, cp1))
        await store.save_checkpoint(cp2, checkpointed(second, cp2))
        got1 = await store.get_latest_checkpoint(first)
        got2 = await store.get_latest_checkpoint(second)
        assert got1 is not None and got1.messages == cp1.messages
        assert got2 is not None and got2.messages == cp2.messages

    # -- several instances on one location ------------------------------------
    async def test_invariants_hold_across_store_instances(
        self, store: EventStore, store_location: Any
    ) -> None:
        other = await self._second(store_location)
        try:
            run_id = await start_run(store)
            # `other` never saw this run; `store` does not see other's appends.
            await other.append_event(
                moved(run_id, RunState.DECISION_RECEIVED, RunState.TOOL_PENDING)
            )
            assert (
                await store.append_event(
                    moved(run_id, RunState.TOOL_PENDING, RunState.APPROVAL_PENDING)
                )
            ).sequence == 6
            with pytest.raises(EventInvariantError):  # other's summary is stale: must reload
                await other.append_event(
                    moved(run_id, RunState.TOOL_PENDING, RunState.APPROVAL_PENDING)
                )
            cp = checkpoint(run_id, messages=[{"role": "user", "content": "x"}])
            await store.save_checkpoint(cp, checkpointed(run_id, cp))
            cp2 = checkpoint(run_id, messages=[{"role": "user", "content": "y"}], next_step=3)
            await other.save_checkpoint(cp2, checkpointed(run_id, cp2))
            cp3 = checkpoint(
                run_id,
                messages=[{"role": "user", "content": "y"}, {"role": "assistant", "content": "z"}],
                next_step=4,
            )
            await store.save_checkpoint(cp3, checkpointed(run_id, cp3))
            await self.settle(store)
            assert await other.get_latest_checkpoint(run_id) == cp3
            events = await other.get_events(run_id)
            assert _sequences(events) == list(range(1, len(events) + 1))
        finally:
            await other.close()

    # -- retention (optional) ------------------------------------------------
    async def test_delete_run_removes_only_finished_runs(self, store: EventStore) -> None:
        _require(store, "delete_run")
        active = await start_run(store)
        done = await start_run(store)
        cp = checkpoint(done)
        await store.save_checkpoint(cp, checkpointed(done, cp))
        await finish_run(store, done)
        with pytest.raises(StorageError):
            await store.delete_run(active)  # type: ignore[attr-defined]
        assert await store.delete_run(done) is True  # type: ignore[attr-defined]
        assert await store.delete_run(done) is False  # type: ignore[attr-defined]
        assert await store.get_run(done) is None
        assert await store.get_events(done) == []
        assert await store.get_latest_checkpoint(done) is None
        assert [run.run_id for run in await store.list_runs()] == [active]
        assert len(await store.get_events(active)) == 4

    # -- leases (optional) ---------------------------------------------------
    async def test_lease_excludes_other_owners(self, store: EventStore) -> None:
        _require(store, "acquire_lease", "release_lease", "fenced")
        run_id = await start_run(store)
        lease = await store.acquire_lease(run_id, "worker-a", 30)  # type: ignore[attr-defined]
        assert (lease.run_id, lease.owner) == (run_id, "worker-a")
        with pytest.raises(LeaseError):
            await store.acquire_lease(run_id, "worker-b", 30)  # type: ignore[attr-defined]
        writer = store.fenced(lease)  # type: ignore[attr-defined]
        stored = await writer.append_event(event(run_id, EventType.MODEL_REQUESTED))
        assert stored.sequence == 5
        with pytest.raises(LeaseError):  # an unfenced write while the run is leased
            await store.append_event(event(run_id, EventType.MODEL_REQUESTED))
        assert len(await store.get_events(run_id)) == 5
        await store.release_lease(lease)  # type: ignore[attr-defined]
        assert (await store.append_event(event(run_id, EventType.MODEL_REQUESTED))).sequence == 6

    async def test_stale_lease_holder_is_fenced_off(self, store: EventStore) -> None:
        _require(store, "acquire_lease", "renew_lease", "fenced")
        run_id = await start_run(store)
        stale = await store.acquire_lease(run_id, "worker-a", 0.05)  # type: ignore[attr-defined]
        await asyncio.sleep(0.15)  # the lease expires
        fresh = await store.acquire_lease(run_id, "worker-b", 30)  # type: ignore[attr-defined]
        assert fresh.token > stale.token
        before = await store.get_events(run_id)
        stale_writer = store.fenced(stale)  # type: ignore[attr-defined]
        run = await store.get_run(run_id)
        assert run is not None
        cp = checkpoint(run_id)
        attempts = [
            stale_writer.append_event(event(run_id, EventType.MODEL_REQUESTED)),
            stale_writer.append_event_and_update_run(event(run_id, EventType.MODEL_REQUESTED), run),
            stale_writer.save_checkpoint(cp, checkpointed(run_id, cp)),
            stale_writer.update_run(run),
            store.renew_lease(stale, 30),  # type: ignore[attr-defined]
        ]
        for attempt in attempts:
            with pytest.raises(LeaseError):
                await attempt
        assert await store.get_events(run_id) == before
        assert await store.get_latest_checkpoint(run_id) is None
        fresh_writer = store.fenced(fresh)  # type: ignore[attr-defined]
        await fresh_writer.append_event(event(run_id, EventType.MODEL_REQUESTED))
        renewed = await store.renew_lease(fresh, 60)  # type: ignore[attr-defined]
        assert renewed.token == fresh.token and renewed.expires_at >= fresh.expires_at
        await fresh_writer.finalize_run(
            run.model_copy(update={"state": RunState.STOPPED, "stop_reason": StopReason.MAX_STEPS}),
            moved(run_id, RunState.DECISION_RECEIVED, RunState.STOPPED),
            terminal(run_id, RunState.STOPPED, StopReason.MAX_STEPS),
        )
        assert await store.is_terminal_run(run_id) is True

    async def test_async_context_manager_closes(self, store_location: Any) -> None:
        opened = await self.make_store(store_location)
        async with opened as entered:  # type: ignore[attr-defined]
            assert entered is opened
            run_id = await start_run(entered)
        if self.shares_location:
            again = await self.make_store(store_location)
            try:
                assert len(await again.get_events(run_id)) == 4
            finally:
                await again.close()


__all__ = [
    "EventStoreConformance",
    "checkpoint",
    "checkpointed",
    "created",
    "event",
    "finish_run",
    "moved",
    "responded",
    "run_record",
    "start_run",
    "terminal",
]
