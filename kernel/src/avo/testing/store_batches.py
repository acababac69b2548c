"""Conformance tests for the optional ``append_batch`` write (mixed into the store suite).

A store without ``append_batch`` skips them; the runtime then replays a batch
through the single-event methods. See :class:`avo.storage.base.BatchEventStore`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from avo.events import AgentEvent, EventType
from avo.exceptions import EventInvariantError, LeaseError, StorageError
from avo.models import RunRecord
from avo.state import RunState, StopReason
from avo.storage.base import EventStore
from avo.testing.store_values import checkpoint, checkpointed, event, moved, start_run, terminal


def _require_batch(store: Any, *more: str) -> None:
    for name in ("append_batch", *more):
        if not hasattr(store, name):
            pytest.skip(f"{type(store).__name__} has no {name}() (optional capability)")


def _started(run_id: str, call_id: str) -> AgentEvent:
    return event(run_id, EventType.TOOL_STARTED, tool_call_id=call_id, name="echo", arguments={})


def _completed(run_id: str, call_id: str) -> AgentEvent:
    return event(run_id, EventType.TOOL_COMPLETED, tool_call_id=call_id, name="echo", success=True)


async def _head(store: EventStore, run_id: str, **updates: Any) -> RunRecord:
    run = await store.get_run(run_id)
    assert run is not None
    return run.model_copy(update=updates)


class BatchConformance:
    """``append_batch``: one atomic write of events, the run head and a checkpoint."""

    async def settle(self, store: EventStore) -> None:  # overridden by the suite
        """See EventStoreConformance.settle."""

    async def _second(self, location: Any) -> EventStore:  # provided by the suite
        raise NotImplementedError

    async def test_batch_writes_events_head_and_checkpoint(
        self, store: EventStore, store_location: Any
    ) -> None:
        _require_batch(store)
        run_id = await start_run(store)
        cp = checkpoint(run_id, state=RunState.DECISION_RECEIVED)
        head = await _head(store, run_id, state=RunState.TOOL_PENDING, steps=1)
        batch = [
            checkpointed(run_id, cp),
            event(run_id, EventType.TOOL_REQUESTED, tool_call_id="c1", name="echo", arguments={}),
            moved(run_id, RunState.DECISION_RECEIVED, RunState.TOOL_PENDING),
        ]
        stored = await store.append_batch(head, batch, cp)  # type: ignore[attr-defined]
        assert [e.sequence for e in stored] == [5, 6, 7]
        assert [e.event_id for e in stored] == [e.event_id for e in batch]
        assert (await store.get_events(run_id))[4:] == stored
        assert await store.get_run(run_id) == head
        assert await store.get_latest_checkpoint(run_id) == cp
        follow = await store.append_event(
            moved(run_id, RunState.TOOL_PENDING, RunState.APPROVAL_PENDING)
        )
        assert follow.sequence == 8
        if not getattr(self, "shares_location", True):
            return
        await self.settle(store)
        other = await self._second(store_location)
        try:
            assert [e.sequence for e in await other.get_events(run_id)] == list(range(1, 9))
            assert await other.get_latest_checkpoint(run_id) == cp
            assert await other.get_run(run_id) == head
        finally:
            await other.close()

    async def test_batch_without_checkpoint_keeps_the_last_one(self, store: EventStore) -> None:
        _require_batch(store)
        run_id = await start_run(store)
        cp = checkpoint(run_id)
        await store.save_checkpoint(cp, checkpointed(run_id, cp))
        head = await _head(store, run_id, state=RunState.TOOL_PENDING)
        await store.append_batch(  # type: ignore[attr-defined]
            head, [moved(run_id, RunState.DECISION_RECEIVED, RunState.TOOL_PENDING)]
        )
        assert await store.get_latest_checkpoint(run_id) == cp
        assert (await store.get_run(run_id)) == head

    async def test_a_tool_start_and_its_result_in_one_batch(self, store: EventStore) -> None:
        _require_batch(store)
        run_id = await start_run(store)
        head = await _head(store, run_id)
        stored = await store.append_batch(  # type: ignore[attr-defined]
            head, [_started(run_id, "c1"), _completed(run_id, "c1")]
        )
        assert [e.sequence for e in stored] == [5, 6]
        with pytest.raises(EventInvariantError):  # a second result for c1
            await store.append_batch(head, [_completed(run_id, "c1")])  # type: ignore[attr-defined]
        with pytest.raises(EventInvariantError):  # a result before its start, in one batch
            await store.append_batch(  # type: ignore[attr-defined]
                head, [_completed(run_id, "c2"), _started(run_id, "c2")]
            )
        assert len(await store.get_events(run_id)) == 6

    @pytest.mark.parametrize("bad", ["transition", "terminal", "other_run", "cp_event", "empty"])
    async def test_a_refused_batch_stores_nothing(self, store: EventStore, bad: str) -> None:
        _require_batch(store)
        run_id = await start_run(store)
        other = await start_run(store)
        before = await store.get_run(run_id)
        assert before is not None
        head = before.model_copy(update={"state": RunState.TOOL_PENDING, "steps": 7})
        cp = checkpoint(run_id)
        good = [
            moved(run_id, RunState.DECISION_RECEIVED, RunState.TOOL_PENDING),
            checkpointed(run_id, cp),
        ]
        wrong: dict[str, list[AgentEvent]] = {
            "transition": [*good, moved(run_id, RunState.TOOL_PENDING, RunState.COMPLETED)],
            "terminal": [
                moved(run_id, RunState.DECISION_RECEIVED, RunState.COMPLETED),
                terminal(run_id, RunState.COMPLETED, StopReason.COMPLETED),
            ],
            "other_run": [*good, event(other, EventType.MODEL_REQUESTED)],
            "cp_event": good[:1],
            "empty": [],
        }
        with pytest.raises(StorageError):
            await store.append_batch(head, wrong[bad], cp)  # type: ignore[attr-defined]
        assert len(await store.get_events(run_id)) == 4
        assert len(await store.get_events(other)) == 4
        assert await store.get_run(run_id) == before
        assert await store.get_latest_checkpoint(run_id) is None
        assert await store.is_terminal_run(run_id) is False
        stored = await store.append_batch(head, good, cp)  # type: ignore[attr-defined]
        assert [e.sequence for e in stored] == [5, 6]

    async def test_concurrent_batches_and_appends_stay_gapless(self, store: EventStore) -> None:
        _require_batch(store)
        run_id = await start_run(store)
        head = await _head(store, run_id)

        async def batch(i: int) -> None:
            marks = [event(run_id, EventType.MODEL_REQUESTED, n=i, k=k) for k in range(3)]
            await store.append_batch(head, marks)  # type: ignore[attr-defined]

        async def single(i: int) -> None:
            await store.append_event(event(run_id, EventType.MODEL_REQUESTED, n=i))

        await asyncio.gather(*(batch(i) if i % 2 else single(i) for i in range(10)))
        events = await store.get_events(run_id)
        assert [e.sequence for e in events] == list(range(1, 4 + 5 * 3 + 5 + 1))
        for i in range(1, 10, 2):  # each batch landed contiguously
            seqs = [e.sequence for e in events if e.payload.get("n") == i]
            assert seqs == list(range(seqs[0], seqs[0] + 3))

    async def test_stale_lease_holder_cannot_batch(self, store: EventStore) -> None:
        _require_batch(store, "acquire_lease", "fenced")
        run_id = await start_run(store)
        stale = await store.acquire_lease(run_id, "worker-a", 0.05)  # type: ignore[attr-defined]
        await asyncio.sleep(0.15)
        fresh = await store.acquire_lease(run_id, "worker-b", 30)  # type: ignore[attr-defined]
        head = await _head(store, run_id, steps=3)
        cp = checkpoint(run_id)
        batch = [event(run_id, EventType.MODEL_REQUESTED), checkpointed(run_id, cp)]
        with pytest.raises(LeaseError):
            await store.fenced(stale).append_batch(head, batch, cp)  # type: ignore[attr-defined]
        with pytest.raises(LeaseError):  # unfenced while leased
            await store.append_batch(head, batch, cp)  # type: ignore[attr-defined]
        assert len(await store.get_events(run_id)) == 4
        assert await store.get_latest_checkpoint(run_id) is None
        stored = await store.fenced(fresh).append_batch(head, batch, cp)  # type: ignore[attr-defined]
        assert [e.sequence for e in stored] == [5, 6]
        assert await store.get_run(run_id) == head


__all__ = ["BatchConformance"]
