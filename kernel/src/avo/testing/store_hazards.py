"""Conformance tests for what broke under races and odd bytes (mixed into the store suite).

- **Stale batches.** Two writers that both read a run and each write a batch
  numbered from that view must not both succeed: the second batch is refused
  *inside the store's write*, before anything of it is stored, with
  :class:`avo.exceptions.StaleWriteError`. Renumbering it and committing would
  leave a ``TOOL_STARTED`` nobody executed in the log.
- **Lone surrogates.** ``os.fsdecode`` turns an undecodable file name into a
  string holding lone surrogates (``"report-\\udcff.txt"``), and a tool may
  return it. A store keeps such text in payloads and checkpoints exactly (it
  reads back equal), and whatever it refuses it refuses with a
  :class:`avo.exceptions.StorageError`, never a raw ``UnicodeEncodeError``.
"""

from __future__ import annotations

from typing import Any

import pytest

from avo.events import AgentEvent, EventType
from avo.exceptions import StaleWriteError, StorageError
from avo.models import RunRecord
from avo.storage.base import EventStore
from avo.storage.batch import ValidatedBatch
from avo.testing.store_values import checkpoint, checkpointed, event, start_run

ODD_NAME = "report-\udcff\udcfe.txt"
"""What ``os.fsdecode(b"report-\\xff\\xfe.txt")`` gives on a UTF-8 system."""


def _numbered(events: list[AgentEvent], first: int) -> list[AgentEvent]:
    return [e.model_copy(update={"sequence": first + i}) for i, e in enumerate(events)]


def _tool_step(run_id: str, call_id: str) -> list[AgentEvent]:
    """What two resumes of one run both write first: a note, then the pending call's start.

    Neither batch changes the run's state, so each is valid on top of the
    other: only its numbering shows that it was built from an older view.
    """
    return [
        event(run_id, EventType.MODEL_REQUESTED, resumed_by=call_id),
        event(run_id, EventType.TOOL_STARTED, tool_call_id=call_id, name="echo", arguments={}),
    ]


def _require_batch(store: Any) -> None:
    if not hasattr(store, "append_batch"):
        pytest.skip(f"{type(store).__name__} has no append_batch() (optional capability)")


class HazardConformance:
    """Stale batches are refused before anything is stored; odd text round-trips."""

    async def settle(self, store: EventStore) -> None:  # overridden by the suite
        """See EventStoreConformance.settle."""

    async def _second(self, location: Any) -> EventStore:  # provided by the suite
        raise NotImplementedError

    async def _head(self, store: EventStore, run_id: str, **updates: Any) -> RunRecord:
        run = await store.get_run(run_id)
        assert run is not None
        return run.model_copy(update=updates)

    # -- stale batches -------------------------------------------------------------
    @pytest.mark.parametrize("kind", ["validated", "plain"])
    async def test_a_batch_numbered_from_a_stale_view_is_refused(
        self, store: EventStore, kind: str
    ) -> None:
        _require_batch(store)
        run_id = await start_run(store)  # 4 events: both writers read this far
        wrap = ValidatedBatch if kind == "validated" else list
        head = await self._head(store, run_id, steps=1)
        mine = wrap(_numbered(_tool_step(run_id, "call-a"), 5))
        theirs = wrap(_numbered(_tool_step(run_id, "call-b"), 5))
        stored = await store.append_batch(head, mine)  # type: ignore[attr-defined]
        assert [e.sequence for e in stored] == [5, 6]
        later = head.model_copy(update={"steps": 2})
        with pytest.raises(StaleWriteError, match="another writer") as refused:
            await store.append_batch(later, theirs)  # type: ignore[attr-defined]
        assert isinstance(refused.value, StorageError)
        assert refused.value.run_id == run_id
        events = await store.get_events(run_id)
        assert [e.sequence for e in events] == list(range(1, 7))
        started = [
            e.payload["tool_call_id"] for e in events if e.event_type is EventType.TOOL_STARTED
        ]
        assert started == ["call-a"]
        assert await store.get_run(run_id) == head
        # A batch numbered past the end (a gap) is refused too; one that fits is stored.
        result = event(run_id, EventType.TOOL_COMPLETED, tool_call_id="call-a", name="echo")
        with pytest.raises(StaleWriteError):
            await store.append_batch(head, wrap(_numbered([result], 8)))  # type: ignore[attr-defined]
        stored = await store.append_batch(head, wrap(_numbered([result], 7)))  # type: ignore[attr-defined]
        assert [e.sequence for e in stored] == [7]

    async def test_a_stale_batch_from_another_instance_is_refused(
        self, store: EventStore, store_location: Any
    ) -> None:
        """Two processes resume one run without a lease: the second batch stores nothing."""
        _require_batch(store)
        run_id = await start_run(store)
        await self.settle(store)
        other = await self._second(store_location)
        try:
            _require_batch(other)
            assert len(await other.get_events(run_id)) == 4  # the other process's view
            head = await self._head(store, run_id, steps=1)
            cp = checkpoint(run_id)
            mine = ValidatedBatch(
                _numbered([*_tool_step(run_id, "call-a"), checkpointed(run_id, cp)], 5)
            )
            await store.append_batch(head, mine, cp)  # type: ignore[attr-defined]
            await self.settle(store)
            cp_b = checkpoint(run_id, next_step=5)
            theirs = ValidatedBatch(
                _numbered([*_tool_step(run_id, "call-b"), checkpointed(run_id, cp_b)], 5)
            )
            with pytest.raises(StaleWriteError):
                await other.append_batch(head, theirs, cp_b)  # type: ignore[attr-defined]
            for reader in (store, other):
                events = await reader.get_events(run_id)
                assert [e.sequence for e in events] == list(range(1, 8))
                assert "call-b" not in {e.payload.get("tool_call_id") for e in events}
                assert await reader.get_latest_checkpoint(run_id) == cp
        finally:
            await other.close()

    async def test_unnumbered_batches_are_still_numbered_by_the_store(
        self, store: EventStore
    ) -> None:
        _require_batch(store)
        run_id = await start_run(store)
        await store.append_event(event(run_id, EventType.MODEL_REQUESTED))
        head = await self._head(store, run_id)
        stored = await store.append_batch(  # type: ignore[attr-defined]
            head,
            [event(run_id, EventType.MODEL_REQUESTED), event(run_id, EventType.MODEL_REQUESTED)],
        )
        assert [e.sequence for e in stored] == [6, 7]

    # -- text a UTF-8 codec cannot encode -------------------------------------------
    async def test_lone_surrogates_round_trip_in_payloads_and_checkpoints(
        self, store: EventStore, store_location: Any
    ) -> None:
        run_id = await start_run(store)
        output = {"matches": [ODD_NAME, "plain.txt"], "note": f"found {ODD_NAME}"}
        started = event(
            run_id, EventType.TOOL_STARTED, tool_call_id="c1", name="glob", arguments={}
        )
        done = event(
            run_id,
            EventType.TOOL_COMPLETED,
            tool_call_id="c1",
            name="glob",
            success=True,
            result={"tool_call_id": "c1", "tool_name": "glob", "success": True, "output": output},
        )
        odd_call = f"call-{ODD_NAME}"
        odd_start = event(
            run_id, EventType.TOOL_STARTED, tool_call_id=odd_call, name="x", arguments={}
        )
        cp = checkpoint(
            run_id,
            messages=[{"role": "tool", "content": f"[{ODD_NAME!s}]", "name": "glob"}],
            completed={"c1", odd_call},
        )
        cp.user_state[ODD_NAME] = [ODD_NAME]
        writes: list[AgentEvent] = []
        batches: Any = store
        if hasattr(batches, "append_batch"):
            head = await self._head(store, run_id)
            writes += await batches.append_batch(head, [started, done])
            writes.append(await store.append_event(odd_start))
            head = await self._head(store, run_id)
            writes += await batches.append_batch(head, [checkpointed(run_id, cp)], cp)
        else:
            for item in (started, done, odd_start):
                writes.append(await store.append_event(item))
            writes.append((await store.save_checkpoint(cp, checkpointed(run_id, cp)))[1])
        events = await store.get_events(run_id)
        assert events[4:] == writes
        result: Any = events[5].payload["result"]
        assert result["output"] == output
        assert events[6].payload["tool_call_id"] == odd_call
        assert await store.get_latest_checkpoint(run_id) == cp
        if not getattr(self, "shares_location", True):
            return
        await self.settle(store)
        other = await self._second(store_location)
        try:
            assert await other.get_events(run_id) == events
            assert await other.get_latest_checkpoint(run_id) == cp
        finally:
            await other.close()

    async def test_odd_text_in_ids_is_stored_or_refused_as_a_storage_error(
        self, store: EventStore
    ) -> None:
        run_id = await start_run(store)
        odd = AgentEvent.model_construct(
            event_id=f"id-{ODD_NAME}",
            run_id=run_id,
            sequence=0,
            event_type=EventType.MODEL_REQUESTED,
            created_at=(await store.get_events(run_id))[0].created_at,
            payload={},
            parent_event_id=f"parent-{ODD_NAME}",
        )
        try:
            stored = await store.append_event(odd)
        except StorageError:
            assert len(await store.get_events(run_id)) == 4
        else:
            assert (await store.get_events(run_id))[-1] == stored
        # Whatever happened, the store still takes the next write.
        after = await store.append_event(event(run_id, EventType.MODEL_REQUESTED))
        assert after.sequence == len(await store.get_events(run_id))


__all__ = ["ODD_NAME", "HazardConformance"]
