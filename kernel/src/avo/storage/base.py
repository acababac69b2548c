"""The EventStore protocol every store plugin implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from avo.events import AgentEvent
from avo.models import Checkpoint, RunRecord


@runtime_checkable
class EventStore(Protocol):
    """Durable home of runs, their append-only events and their checkpoints.

    Every write path must enforce the event invariants with
    :func:`avo.events.validate_event_append` and assign per-run ascending
    sequences. The runtime validates too, before it calls the store.
    Multi-row writes (``append_event_and_update_run``, ``save_checkpoint``,
    ``finalize_run``) are atomic.
    """

    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        """Store a new run and its RUN_CREATED event."""
        ...

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        """Append one event; return it with its sequence assigned."""
        ...

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        """Append an event and replace the run head, atomically."""
        ...

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        """Store a checkpoint and its CHECKPOINT_CREATED event, atomically."""
        ...

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        """Append the terminal STATE_CHANGED and terminal events and the final head, atomically."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run head, or None."""
        ...

    async def update_run(self, run: RunRecord) -> RunRecord:
        """Replace the run head."""
        ...

    async def list_runs(self) -> list[RunRecord]:
        """Every run, newest first."""
        ...

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        """A run's events in ascending sequence."""
        ...

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """The newest checkpoint of a run, or None."""
        ...

    async def is_terminal_run(self, run_id: str) -> bool:
        """True when the run's log ends with a terminal event."""
        ...

    async def close(self) -> None:
        """Release resources."""
        ...


@runtime_checkable
class BatchEventStore(Protocol):
    """The optional batched write: everything between two durable boundaries in one transaction.

    The runtime buffers the events a run makes between two points where they
    must be durable (before a tool runs, before the provider is called, before
    anything outside the kernel is awaited) and hands them over in one call
    when the store offers ``append_batch``; otherwise it replays them through
    the single-event methods. Contract:

    - ``events`` is non-empty, all of ``run.run_id``, and each is validated in
      order against the stored log — all or nothing: a bad event stores
      none of the batch and leaves the head unchanged (the runtime's own
      batches come as ``avo.storage.batch.ValidatedBatch``, already validated:
      see ``avo.storage.batch.follows`` for when a store may rely on that);
    - sequences are assigned per run, ascending and gapless: events with
      sequence 0 are numbered by the store; pre-numbered events (the
      runtime's) are returned as given when they fit, and a batch numbered
      for other slots is refused with ``StaleWriteError`` before anything is
      stored (it was built from an out-of-date view: another writer appended);
    - the run head is replaced by ``run``;
    - ``checkpoint``, when given, is stored in the same transaction, and the
      batch must hold its CHECKPOINT_CREATED event (``payload.checkpoint_id``);
    - a terminal event is refused (``EventInvariantError``): a run ends
      through ``finalize_run`` only.

    Returns the stored events, in order.
    """

    async def append_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None = None,
    ) -> list[AgentEvent]:
        """Append ``events``, replace the run head and store ``checkpoint``, atomically."""
        ...


@runtime_checkable
class EventTailStore(Protocol):
    """The optional read of a run's newest events: those after a sequence one has seen.

    Whoever follows a live run (a prompt waiting for an answer given elsewhere,
    a page streaming a run) reads only what is new instead of the whole log.
    Contract: the run's events with ``sequence > after``, in ascending
    sequence ([] for an unknown run or when nothing is newer).
    """

    async def get_events_after(self, run_id: str, after: int) -> list[AgentEvent]:
        """The run's events whose sequence is greater than ``after``."""
        ...


async def events_after(store: EventStore, run_id: str, after: int) -> list[AgentEvent]:
    """The events of ``run_id`` after sequence ``after``: the store's own tail read when it
    has one (:class:`EventTailStore`), else its whole log, filtered."""
    read = getattr(store, "get_events_after", None)
    if callable(read):
        events: list[AgentEvent] = await read(run_id, after)
        return events
    return [event for event in await store.get_events(run_id) if event.sequence > after]


__all__ = ["BatchEventStore", "EventStore", "EventTailStore", "events_after"]
