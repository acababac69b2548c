"""Shape checks and validation shared by every ``append_batch`` implementation.

A store calls :func:`stage_batch` inside its transaction: it checks the batch's
shape (one run, no terminal event, the checkpoint's event present), validates
every event in order against a copy of the stored log (§6), and returns the
events with their sequences — all before anything is written, so a refused
batch stores nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from avo.events import TERMINAL_EVENT_TYPES, AgentEvent, EventType, RunLogState
from avo.events import validate_event_append as _validate
from avo.exceptions import EventInvariantError, StorageError
from avo.models import Checkpoint, RunRecord, replaced


def check_batch_shape(
    run: RunRecord, events: Sequence[AgentEvent], checkpoint: Checkpoint | None
) -> None:
    """Refuse an empty batch, another run's event, a terminal event, a stray checkpoint."""
    run_id = run.run_id
    if not events:
        raise StorageError(f"run {run_id}: append_batch needs at least one event")
    for event in events:
        if event.run_id != run_id:
            raise EventInvariantError(
                f"run {run_id}: event {event.event_type.value} belongs to run {event.run_id}",
                run_id=run_id,
            )
        if event.event_type in TERMINAL_EVENT_TYPES:
            raise EventInvariantError(
                f"run {run_id}: append_batch cannot carry the terminal event "
                f"{event.event_type.value}; a run ends through finalize_run",
                run_id=run_id,
            )
    if checkpoint is None:
        return
    if checkpoint.run_id != run_id:
        raise StorageError(
            f"checkpoint belongs to run {checkpoint.run_id!r}, the batch to run {run_id!r}"
        )
    for event in events:
        if (
            event.event_type is EventType.CHECKPOINT_CREATED
            and event.payload.get("checkpoint_id") == checkpoint.checkpoint_id
        ):
            return
    raise StorageError(
        f"run {run_id}: checkpoint {checkpoint.checkpoint_id} has no checkpoint_created "
        "event in the batch; append the checkpoint with its event"
    )


def stage_batch(
    log: RunLogState,
    run: RunRecord,
    events: Sequence[AgentEvent],
    checkpoint: Checkpoint | None,
) -> tuple[RunLogState, list[AgentEvent]]:
    """Validate a batch against ``log`` without touching it.

    Returns the log state after the batch and the events numbered from
    ``log.last_sequence + 1``; the caller writes them and then adopts the state.
    """
    check_batch_shape(run, events, checkpoint)
    scratch = log.copy()
    staged: list[AgentEvent] = []
    sequence = log.last_sequence
    for event in events:
        _validate(scratch, event)
        sequence += 1
        stored = event if event.sequence == sequence else replaced(event, sequence=sequence)
        scratch.apply(stored)
        staged.append(stored)
    return scratch, staged


__all__ = ["check_batch_shape", "stage_batch"]
