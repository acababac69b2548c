"""Shape checks and validation shared by every ``append_batch`` implementation.

A store calls :func:`apply_batch` inside its transaction: it checks the batch's
shape (one run, no terminal event, the checkpoint's event present), validates
every event in order against the store's log summary and folds it in, in
place and in O(batch) — a refused batch leaves the summary as it was. The
events come back with their sequences. A batch the runtime already validated
against this very log (:class:`ValidatedBatch`, :func:`follows`) is folded in
without the second check.
"""

from __future__ import annotations

from collections.abc import Sequence

from avo.events import (
    _TOOL_RESULTS,
    _TOOL_STARTED,
    TERMINAL_EVENT_TYPES,
    AgentEvent,
    EventType,
    RunLogState,
)
from avo.exceptions import EventInvariantError, StaleWriteError, StorageError
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


class ValidatedBatch(list[AgentEvent]):
    """A batch the runtime has already validated against its own log summary.

    The runtime hands its buffered events to ``append_batch`` as this type. Its
    log summary was built from the run's stored events plus its own appends,
    so when the batch's first sequence directly follows a store's stored log
    (no other writer appended meanwhile), validating the events again against
    that log can only repeat the runtime's answer: a store may then fold them
    in without re-checking them (:func:`apply_batch` does). Any other caller's
    list is validated in full.
    """

    __slots__ = ()


def follows(log: RunLogState, run: RunRecord, events: Sequence[AgentEvent]) -> bool:
    """True when ``events`` is a runtime-validated batch that continues ``log`` directly."""
    return (
        type(events) is ValidatedBatch
        and len(events) > 0
        and not log.terminal
        and log.created
        and log.run_id == run.run_id
        and events[0].sequence == log.last_sequence + 1
        and events[-1].sequence == log.last_sequence + len(events)
    )


def stale_batch(run_id: str, numbered: int, slot: int) -> StaleWriteError:
    """The refusal of a batch whose event was numbered ``numbered`` for log slot ``slot``."""
    return StaleWriteError(
        f"run {run_id}: this batch was numbered from an out-of-date view of the run (an event "
        f"numbered {numbered} would be stored as {slot}): another writer appended to this run "
        "since this writer read it, so nothing of the batch was stored. Drive a run from one "
        "runtime at a time (take a lease: store.acquire_lease / store.fenced), then re-read "
        "the run",
        run_id=run_id,
    )


# Enum members bound once: ``EventType.X`` is a slow class-attribute lookup on 3.11.
_CHECKPOINT = EventType.CHECKPOINT_CREATED


def apply_batch(
    log: RunLogState,
    run: RunRecord,
    events: Sequence[AgentEvent],
    checkpoint: Checkpoint | None,
) -> list[AgentEvent]:
    """Check a batch's shape, validate it in order and fold it into ``log`` in place.

    All or nothing, in O(batch): nothing is copied, and if anything is refused
    the log is put back as it was before the error propagates. Returns the
    events numbered from ``log.last_sequence + 1``. Refuses what
    :func:`check_batch_shape` refuses, with its errors, and a batch whose
    events were numbered by the caller (a sequence other than 0) for other
    slots than those, with :class:`~avo.exceptions.StaleWriteError`: such a
    batch was built from an out-of-date view of the run.
    """
    if follows(log, run, events):
        # The runtime validated these against this very log: fold them in.
        for event in events:
            log.apply(event)
        return list(events)
    run_id = run.run_id
    if not events or (checkpoint is not None and checkpoint.run_id != run_id):
        check_batch_shape(run, events, checkpoint)  # raises the shape error
    wanted = None if checkpoint is None else checkpoint.checkpoint_id
    found = wanted is None
    before = (log.created, log.terminal, log.state, log.model_responded, log.last_sequence)
    added: list[tuple[set[str], str]] = []  # tool-call ids this batch put into the log
    staged: list[AgentEvent] = []
    sequence = log.last_sequence
    try:
        for event in events:
            fields = event.__dict__  # one read through the model's __getattr__ hook
            kind = fields["event_type"]
            if fields["run_id"] != run_id or kind in TERMINAL_EVENT_TYPES:
                check_batch_shape(run, [event], None)  # raises the shape error
            sequence += 1
            numbered = fields["sequence"]
            if numbered != sequence:
                if numbered:
                    raise stale_batch(run_id, numbered, sequence)
                stored = replaced(event, sequence=sequence)
            else:
                stored = event
            if kind in _TOOL_RESULTS or kind is _TOOL_STARTED:
                target = (
                    log.started_tool_calls if kind is _TOOL_STARTED else log.finished_tool_calls
                )
                call_id = fields["payload"].get("tool_call_id")
                if isinstance(call_id, str) and call_id not in target:
                    added.append((target, call_id))  # discarded again if refused
            elif kind is _CHECKPOINT and not found:
                found = fields["payload"].get("checkpoint_id") == wanted
            log.accept(stored)
            staged.append(stored)
        if not found:
            check_batch_shape(run, events, checkpoint)  # raises: the checkpoint's event is missing
    except BaseException:
        (log.created, log.terminal, log.state, log.model_responded, log.last_sequence) = before
        for ids, call_id in added:
            ids.discard(call_id)
        raise
    return staged


__all__ = ["ValidatedBatch", "apply_batch", "check_batch_shape", "follows", "stale_batch"]
