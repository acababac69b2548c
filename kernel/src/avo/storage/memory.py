"""InMemoryEventStore: the dict-backed default store (the null default)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from avo.events import AgentEvent, EventType, RunLogState, validate_event_append
from avo.exceptions import EventInvariantError, RunNotFoundError, StorageError
from avo.models import Checkpoint, RunRecord, replaced, trusted
from avo.state import is_terminal
from avo.storage.batch import apply_batch
from avo.storage.sessions import InMemorySessions

_Row = tuple[str, int, EventType, datetime, dict[str, Any], str | None]


def _pack(event: AgentEvent) -> _Row:
    """An event's fields as one tuple (the run id is the key it is stored under)."""
    fields = event.__dict__
    return (
        fields["event_id"],
        fields["sequence"],
        fields["event_type"],
        fields["created_at"],
        fields["payload"],
        fields["parent_event_id"],
    )


def _unpack(run_id: str, row: _Row) -> AgentEvent:
    event_id, sequence, kind, created_at, payload, parent = row
    return trusted(
        AgentEvent,
        {
            "event_id": event_id,
            "run_id": run_id,
            "sequence": sequence,
            "event_type": kind,
            "created_at": created_at,
            "payload": payload,
            "parent_event_id": parent,
        },
    )


class InMemoryEventStore(InMemorySessions):
    """Same contract as every durable store; nothing survives the process."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}
        # Each run's events as plain tuples (see _pack): one small object per event for
        # the garbage collector to walk instead of a model and its field dict, and
        # about a quarter less memory for a long log.
        self._events: dict[str, list[_Row]] = {}
        self._logs: dict[str, RunLogState] = {}
        self._checkpoints: dict[str, Checkpoint] = {}
        self._order: list[str] = []
        self._blobs: Any = None

    async def put_blob(self, ref: str, data: bytes, media_type: str) -> None:
        """Keep a run's image or document bytes under their digest (see avo.blobs)."""
        if self._blobs is None:
            from avo.blobs import InMemoryBlobStore

            self._blobs = InMemoryBlobStore()
        await self._blobs.put_blob(ref, data, media_type)

    async def get_blob(self, ref: str) -> bytes | None:
        """The bytes stored under ``ref``, or None."""
        return None if self._blobs is None else await self._blobs.get_blob(ref)

    async def __aenter__(self) -> InMemoryEventStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _log(self, run_id: str) -> RunLogState:
        try:
            return self._logs[run_id]
        except KeyError:
            raise RunNotFoundError(f"run {run_id!r} does not exist", run_id=run_id) from None

    def _stage(self, log: RunLogState, events: list[AgentEvent]) -> list[AgentEvent]:
        """Validate a batch (all or nothing) and assign sequences, without committing."""
        scratch = log.copy() if len(events) > 1 else log
        staged: list[AgentEvent] = []
        sequence = log.last_sequence
        for event in events:
            validate_event_append(scratch, event)
            sequence += 1
            stored = event if event.sequence == sequence else replaced(event, sequence=sequence)
            if scratch is not log:
                scratch.apply(stored)
            staged.append(stored)
        return staged

    @staticmethod
    def _same_run(run: RunRecord, *events: AgentEvent) -> None:
        for event in events:
            if event.run_id != run.run_id:
                raise EventInvariantError(
                    f"run {run.run_id}: event {event.event_type.value} belongs to run "
                    f"{event.run_id}",
                    run_id=run.run_id,
                )

    def _append_one(self, log: RunLogState, event: AgentEvent) -> AgentEvent:
        """Validate, sequence and store one event (the common, single-event path)."""
        validate_event_append(log, event)
        sequence = log.last_sequence + 1
        stored = event if event.sequence == sequence else replaced(event, sequence=sequence)
        log.apply(stored)
        self._events[log.run_id].append(_pack(stored))
        return stored

    def _commit(self, log: RunLogState, staged: list[AgentEvent]) -> None:
        events = self._events[log.run_id]
        for event in staged:
            log.apply(event)
            events.append(_pack(event))

    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        if run.run_id in self._runs:
            raise StorageError(f"run {run.run_id!r} already exists")
        if event.run_id != run.run_id or event.event_type is not EventType.RUN_CREATED:
            raise EventInvariantError(
                f"run {run.run_id}: create_run needs that run's run_created event",
                run_id=run.run_id,
            )
        log = RunLogState(run_id=run.run_id)
        validate_event_append(log, event)
        self._runs[run.run_id] = run
        self._events[run.run_id] = []
        self._logs[run.run_id] = log
        self._order.append(run.run_id)
        self._commit(log, [replaced(event, sequence=1)])
        return run

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        return self._append_one(self._log(event.run_id), event)

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        self._same_run(run, event)
        stored = self._append_one(self._log(event.run_id), event)
        self._runs[run.run_id] = run
        return stored, run

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        log = self._log(event.run_id)
        if checkpoint.run_id != event.run_id:
            raise StorageError(
                f"checkpoint belongs to run {checkpoint.run_id!r}, event to {event.run_id!r}"
            )
        stored = self._append_one(log, event)
        self._checkpoints[checkpoint.run_id] = checkpoint
        return checkpoint, stored

    async def append_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None = None,
    ) -> list[AgentEvent]:
        """Append ``events``, replace the head, store ``checkpoint``: all or nothing."""
        staged = apply_batch(self._log(run.run_id), run, events, checkpoint)
        self._events[run.run_id].extend(map(_pack, staged))
        self._runs[run.run_id] = run
        if checkpoint is not None:
            self._checkpoints[run.run_id] = checkpoint
        return staged

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        self._same_run(run, state_event, terminal_event)
        log = self._log(run.run_id)
        staged = self._stage(log, [state_event, terminal_event])
        self._commit(log, staged)
        self._runs[run.run_id] = run
        return staged[0], staged[1]

    async def get_run(self, run_id: str) -> RunRecord | None:
        return self._runs.get(run_id)

    async def update_run(self, run: RunRecord) -> RunRecord:
        if run.run_id not in self._runs:
            raise RunNotFoundError(f"run {run.run_id!r} does not exist", run_id=run.run_id)
        self._runs[run.run_id] = run
        return run

    async def list_runs(self) -> list[RunRecord]:
        return [self._runs[run_id] for run_id in reversed(self._order)]

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        return [_unpack(run_id, row) for row in self._events.get(run_id, ())]

    async def get_events_after(self, run_id: str, after: int) -> list[AgentEvent]:
        rows = self._events.get(run_id, [])  # sequences 1..n, gapless
        return [_unpack(run_id, row) for row in rows[max(after, 0) :]]

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        return self._checkpoints.get(run_id)

    async def is_terminal_run(self, run_id: str) -> bool:
        log = self._logs.get(run_id)
        if log is not None and log.terminal:
            return True
        run = self._runs.get(run_id)
        return run is not None and is_terminal(run.state)

    async def delete_run(self, run_id: str) -> bool:
        """Remove a finished run entirely (retention). Refuses a non-terminal run."""
        if run_id not in self._runs:
            return False
        if not await self.is_terminal_run(run_id):
            raise StorageError(f"run {run_id!r} is not finished; only finished runs can be deleted")
        self._runs.pop(run_id, None)
        self._events.pop(run_id, None)
        self._logs.pop(run_id, None)
        self._checkpoints.pop(run_id, None)
        self._order.remove(run_id)
        return True

    async def close(self) -> None:
        return None


__all__ = ["InMemoryEventStore"]
