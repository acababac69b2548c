"""Shape checks and validation shared by every ``append_batch`` implementation.

A store calls :func:`apply_batch` inside its transaction: it checks the batch's
shape (one run, no terminal event, the checkpoint's event present), validates
every event in order against the store's log summary (§6) and folds it in, in
place and in O(batch) — a refused batch leaves the summary as it was, and
``rollback()`` undoes an accepted one whose write then failed. The events come
back with their sequences. :func:`stage_batch` does the same on a copy (O(run):
it copies the tool-call sets).
"""

from __future__ import annotations

from collections.abc import Sequence

from avo.events import TERMINAL_EVENT_TYPES, AgentEvent, EventType, RunLogState
from avo.events import validate_event_append as _validate
from avo.exceptions import EventInvariantError, StorageError
from avo.models import Checkpoint, RunRecord, replaced
from avo.state import RunState


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


class StagedBatch:
    """A batch validated and folded into a log in place, which ``rollback`` undoes."""

    __slots__ = ("_added", "_log", "_scalars", "events")

    def __init__(
        self,
        log: RunLogState,
        scalars: tuple[bool, bool, RunState, bool, int],
        added: list[tuple[set[str], str]],
        events: list[AgentEvent],
    ) -> None:
        self._log = log
        self._scalars = scalars
        self._added = added
        self.events = events

    def rollback(self) -> None:
        """Put the log back as it was before the batch (the write did not happen)."""
        log = self._log
        (log.created, log.terminal, log.state, log.model_responded, log.last_sequence) = (
            self._scalars
        )
        for target, call_id in self._added:
            target.discard(call_id)
        self._added = []


_TOOL_ID_KINDS = frozenset(
    {EventType.TOOL_STARTED, EventType.TOOL_COMPLETED, EventType.TOOL_FAILED}
)


def apply_batch(
    log: RunLogState,
    run: RunRecord,
    events: Sequence[AgentEvent],
    checkpoint: Checkpoint | None,
) -> StagedBatch:
    """Check a batch's shape, validate it in order and fold it into ``log`` in place.

    All or nothing, in O(batch): nothing is copied. If anything is refused the
    log is restored before the error propagates; if the caller's write then
    fails, it calls ``rollback()`` on the result. The returned ``events`` carry
    their sequences from ``log.last_sequence + 1``. Refuses what
    :func:`check_batch_shape` refuses, with the same errors.
    """
    run_id = run.run_id
    if not events:
        raise StorageError(f"run {run_id}: append_batch needs at least one event")
    if checkpoint is not None and checkpoint.run_id != run_id:
        raise StorageError(
            f"checkpoint belongs to run {checkpoint.run_id!r}, the batch to run {run_id!r}"
        )
    wanted = None if checkpoint is None else checkpoint.checkpoint_id
    found = wanted is None
    scalars = (log.created, log.terminal, log.state, log.model_responded, log.last_sequence)
    added: list[tuple[set[str], str]] = []
    staged: list[AgentEvent] = []
    sequence = log.last_sequence
    try:
        for event in events:
            fields = event.__dict__  # one read through the model's __getattr__ hook
            kind = fields["event_type"]
            if fields["run_id"] != run_id or kind in TERMINAL_EVENT_TYPES:
                check_batch_shape(run, [event], None)  # raises the shape error
            sequence += 1
            stored = event if fields["sequence"] == sequence else replaced(event, sequence=sequence)
            if kind in _TOOL_ID_KINDS:
                target = (
                    log.started_tool_calls
                    if kind is EventType.TOOL_STARTED
                    else log.finished_tool_calls
                )
                call_id = fields["payload"].get("tool_call_id")
                fresh = isinstance(call_id, str) and call_id not in target
                log.accept(stored)
                if fresh:
                    added.append((target, str(call_id)))
            else:
                if (
                    not found
                    and kind is EventType.CHECKPOINT_CREATED
                    and fields["payload"].get("checkpoint_id") == wanted
                ):
                    found = True
                log.accept(stored)
            staged.append(stored)
        if not found:
            raise StorageError(
                f"run {run_id}: checkpoint {wanted} has no checkpoint_created "
                "event in the batch; append the checkpoint with its event"
            )
    except BaseException:
        StagedBatch(log, scalars, added, staged).rollback()
        raise
    return StagedBatch(log, scalars, added, staged)


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


__all__ = ["StagedBatch", "apply_batch", "check_batch_shape", "stage_batch"]
