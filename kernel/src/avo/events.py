"""AgentEvent, EventType, append-time invariants.

The six event invariants are checked by :func:`validate_event_append` against a
small incremental summary of a run's log (:class:`RunLogState`), so checking an
append costs O(1) however long the run is. Stores keep one ``RunLogState`` per
run (or rebuild it with :meth:`RunLogState.from_events`) and call
``validate_event_append`` then ``state.apply(event)`` on every write path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field, JsonValue

from avo.exceptions import EventInvariantError, InvalidStateTransitionError
from avo.models import AvoModel, new_id, utc_now
from avo.state import (
    LEGAL_MOVES,
    MODEL_OUTCOME_REASONS,
    RunState,
    StopReason,
    validate_terminal_outcome,
    validate_transition,
)


class EventType(StrEnum):
    """Every kind of event a run's log can hold (the 21 core kinds, then avo's additions)."""

    RUN_CREATED = "run_created"
    STATE_CHANGED = "state_changed"
    MODEL_REQUESTED = "model_requested"
    MODEL_RESPONDED = "model_responded"
    MODEL_FAILED = "model_failed"
    ROUTE_FAILOVER = "route_failover"
    SAVER_APPLIED = "saver_applied"
    TOOL_REQUESTED = "tool_requested"
    TOOL_APPROVAL_REQUESTED = "tool_approval_requested"
    TOOL_APPROVED = "tool_approved"
    TOOL_DENIED = "tool_denied"
    TOOL_STARTED = "tool_started"
    TOOL_COMPLETED = "tool_completed"
    TOOL_FAILED = "tool_failed"
    POLICY_TRIGGERED = "policy_triggered"
    CHECKPOINT_CREATED = "checkpoint_created"
    RUN_RESUMED = "run_resumed"
    RUN_COMPLETED = "run_completed"
    RUN_FAILED = "run_failed"
    RUN_STOPPED = "run_stopped"
    RUN_CANCELLED = "run_cancelled"
    # Added by avo: a hook or run observer raised (payload: hook, source, event, error_type,
    # error, outcome); see avo.hooks and docs/hooks.md.
    HOOK_FAILED = "hook_failed"
    # More additions beyond the reference's 21 (see docs/reference-map.md):
    REQUEST_SHAPED = "request_shaped"
    """The request seam changed what the model sees (recorded when the shaping changes)."""
    CONTEXT_COMPACTED = "context_compacted"
    """A context policy elided old tool output or summarised old turns (the view only)."""
    RUN_STEERED = "run_steered"
    """A message posted while the run worked joined the transcript before a model call."""
    HUMAN_INPUT_REQUESTED = "human_input_requested"
    """A tool call waits for a person (an approval, or a question); see avo.approval.
    Payload: tool_call_id, kind ("approval" | "question"), name, arguments (secrets
    masked), risk, reason, rule, model_reason, question, choices, expires_at."""
    HUMAN_INPUT_RECEIVED = "human_input_received"
    """A person's answer to a HUMAN_INPUT_REQUESTED: tool_call_id, decision
    ("approve" | "deny" | "reply"), reason or text, by, via."""
    TOOL_PROGRESS = "tool_progress"
    """A running tool call's progress (a note, not state; see avo.tool_progress):
    tool_call_id, name, progress, total, message. Throttled per call."""


TERMINAL_EVENT_TYPES: frozenset[EventType] = frozenset(
    {
        EventType.RUN_COMPLETED,
        EventType.RUN_FAILED,
        EventType.RUN_STOPPED,
        EventType.RUN_CANCELLED,
    }
)

_STATE_BY_VALUE: dict[str, RunState] = {state.value: state for state in RunState}

TERMINAL_EVENT_FOR_STATE: dict[RunState, EventType] = {
    RunState.COMPLETED: EventType.RUN_COMPLETED,
    RunState.FAILED: EventType.RUN_FAILED,
    RunState.STOPPED: EventType.RUN_STOPPED,
    RunState.CANCELLED: EventType.RUN_CANCELLED,
}


class AgentEvent(AvoModel):
    """One immutable entry of a run's event log."""

    event_id: str = Field(default_factory=new_id)
    run_id: str = Field(min_length=1)
    sequence: int = Field(default=0, ge=0)
    event_type: EventType
    created_at: datetime = Field(default_factory=utc_now)
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    parent_event_id: str | None = None


@dataclass
class RunLogState:
    """What the invariants need to know about a run's log so far."""

    run_id: str
    created: bool = False
    terminal: bool = False
    state: RunState = RunState.CREATED
    model_responded: bool = False
    last_sequence: int = 0
    started_tool_calls: set[str] = field(default_factory=set)
    finished_tool_calls: set[str] = field(default_factory=set)
    requested_inputs: set[str] = field(default_factory=set)
    answered_inputs: set[str] = field(default_factory=set)

    @classmethod
    def from_events(cls, run_id: str, events: Iterable[AgentEvent]) -> RunLogState:
        """Rebuild the summary from a stored log (ascending sequence)."""
        state = cls(run_id=run_id)
        for event in events:
            state.apply(event)
        return state

    def copy(self) -> RunLogState:
        """An independent copy (for validating a batch before committing it)."""
        return RunLogState(
            run_id=self.run_id,
            created=self.created,
            terminal=self.terminal,
            state=self.state,
            model_responded=self.model_responded,
            last_sequence=self.last_sequence,
            started_tool_calls=set(self.started_tool_calls),
            finished_tool_calls=set(self.finished_tool_calls),
            requested_inputs=set(self.requested_inputs),
            answered_inputs=set(self.answered_inputs),
        )

    @property
    def open_tool_calls(self) -> set[str]:
        """Tool calls that started without a recorded result."""
        return self.started_tool_calls - self.finished_tool_calls

    @property
    def open_inputs(self) -> set[str]:
        """Tool calls waiting for a person: requested, not answered yet."""
        return self.requested_inputs - self.answered_inputs

    def accept(self, event: AgentEvent) -> None:
        """``validate_event_append(self, event)`` then ``apply(event)``, in one pass.

        The run loop's path: state changes, tool starts and results and the
        payload-free-rule kinds (model, approval, checkpoint, ... events) are
        checked and folded inline; everything else, and anything refused, goes
        through the full check, which raises the detailed EventInvariantError.
        """
        # One read of the model's field dict: attribute reads on pydantic models
        # go through its __getattr__ hook, and this runs ~28 times a loop step.
        fields = event.__dict__
        kind = fields["event_type"]
        if fields["run_id"] == self.run_id and self.created and not self.terminal:
            sequence = fields["sequence"]
            if kind is _STATE_CHANGED:
                payload = fields["payload"]
                move: tuple[Any, Any] = (payload.get("from_state"), payload.get("to_state"))
                try:  # an unhashable value raises: the full check below names it
                    target = _LEGAL_TARGET.get(move) if move[0] == self.state else None
                except TypeError:
                    target = None
                if target is not None:
                    if sequence > self.last_sequence:
                        self.last_sequence = sequence
                    self.state = target
                    return
            elif kind in _NO_PAYLOAD_RULE:
                if sequence > self.last_sequence:
                    self.last_sequence = sequence
                if kind is _MODEL_RESPONDED:
                    self.model_responded = True
                return
            elif kind is _TOOL_STARTED:
                call_id = fields["payload"].get("tool_call_id")
                if type(call_id) is str and call_id:
                    if sequence > self.last_sequence:
                        self.last_sequence = sequence
                    self.started_tool_calls.add(call_id)
                    return
            elif kind in _TOOL_RESULTS:
                call_id = fields["payload"].get("tool_call_id")
                if (
                    type(call_id) is str
                    and call_id in self.started_tool_calls
                    and call_id not in self.finished_tool_calls
                ):
                    if sequence > self.last_sequence:
                        self.last_sequence = sequence
                    self.finished_tool_calls.add(call_id)
                    return
        validate_event_append(self, event)
        self.apply(event)

    def apply(self, event: AgentEvent) -> None:
        """Fold an accepted event into the summary."""
        fields = event.__dict__  # one read through the model's __getattr__ hook
        kind = fields["event_type"]
        sequence = fields["sequence"]
        if sequence > self.last_sequence:
            self.last_sequence = sequence
        if kind is _STATE_CHANGED:
            self.state = _STATE_BY_VALUE[str(fields["payload"]["to_state"])]
        elif kind is _TOOL_STARTED:
            self.started_tool_calls.add(str(fields["payload"]["tool_call_id"]))
        elif kind in _TOOL_RESULTS:
            self.finished_tool_calls.add(str(fields["payload"]["tool_call_id"]))
        elif kind is _MODEL_RESPONDED:
            self.model_responded = True
        elif kind is EventType.HUMAN_INPUT_REQUESTED:  # (again, once answered: a tool's
            call_id = str(fields["payload"]["tool_call_id"])  # question after an approval)
            self.requested_inputs.add(call_id)
            self.answered_inputs.discard(call_id)
        elif kind is EventType.HUMAN_INPUT_RECEIVED:
            self.answered_inputs.add(str(fields["payload"]["tool_call_id"]))
        elif kind is _RUN_CREATED:
            self.created = True
        elif kind in TERMINAL_EVENT_TYPES:
            self.terminal = True


_LEGAL_TARGET: dict[tuple[Any, Any], RunState] = {
    move: _STATE_BY_VALUE[move[1]] for move in LEGAL_MOVES
}
# Members bound once for accept(): ``EventType.X`` is a slow class-attribute lookup on 3.11.
_STATE_CHANGED = EventType.STATE_CHANGED
_RUN_CREATED = EventType.RUN_CREATED
_MODEL_RESPONDED = EventType.MODEL_RESPONDED
_TOOL_STARTED = EventType.TOOL_STARTED
_TOOL_RESULTS = frozenset({EventType.TOOL_COMPLETED, EventType.TOOL_FAILED})
_NO_PAYLOAD_RULE: frozenset[EventType] = frozenset(EventType) - {
    EventType.HUMAN_INPUT_REQUESTED,
    EventType.HUMAN_INPUT_RECEIVED,
    EventType.RUN_CREATED,
    EventType.STATE_CHANGED,
    EventType.TOOL_STARTED,
    EventType.TOOL_COMPLETED,
    EventType.TOOL_FAILED,
    *TERMINAL_EVENT_TYPES,
}
"""Kinds the invariants check only for run, order and terminal: nothing in their payload."""


def _fail(state: RunLogState, message: str) -> EventInvariantError:
    return EventInvariantError(f"run {state.run_id}: {message}", run_id=state.run_id)


def validate_event_append(state: RunLogState, event: AgentEvent) -> None:
    """Raise EventInvariantError unless ``event`` may follow the log ``state`` summarises.

    The rules: the first event is RUN_CREATED and there is exactly one;
    nothing follows a terminal event; STATE_CHANGED carries a legal transition
    from the current state; a tool result needs a prior TOOL_STARTED of the same
    call and no earlier result; a terminal event's state and stop reason agree;
    a person is asked at most once per tool call, and an answer needs an open
    request and a run that waits for it (paused or awaiting approval);
    RUN_COMPLETED, and a stop for a model outcome (OUTPUT_TRUNCATED,
    MODEL_REFUSED), need a prior MODEL_RESPONDED.
    """
    kind = event.event_type
    if event.run_id != state.run_id:
        raise _fail(state, f"event belongs to run {event.run_id}")
    if state.terminal:
        raise _fail(state, f"cannot append {kind.value} after a terminal event")
    if not state.created:
        if kind is not EventType.RUN_CREATED:
            raise _fail(state, f"the first event must be run_created, got {kind.value}")
        return
    if kind is EventType.RUN_CREATED:
        raise _fail(state, "run_created may appear only once")
    payload = event.payload
    if kind is EventType.STATE_CHANGED:
        move = (payload.get("from_state"), payload.get("to_state"))
        try:
            legal = move in LEGAL_MOVES and move[0] == state.state
        except TypeError:  # an unhashable value: the full check names it
            legal = False
        if not legal:
            _check_state_changed(state, payload)
    elif kind in (EventType.TOOL_COMPLETED, EventType.TOOL_FAILED):
        call_id = payload.get("tool_call_id")
        if not isinstance(call_id, str) or call_id not in state.started_tool_calls:
            raise _fail(state, f"{kind.value} for tool call {call_id!r} without tool_started")
        if call_id in state.finished_tool_calls:
            raise _fail(state, f"tool call {call_id!r} already has a result")
    elif kind is EventType.TOOL_STARTED:
        call_id = payload.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _fail(state, "tool_started requires a tool_call_id")
    elif kind is EventType.HUMAN_INPUT_REQUESTED:
        _check_input_request(state, payload)
    elif kind is EventType.HUMAN_INPUT_RECEIVED:
        _check_input_answer(state, payload)
    elif kind in TERMINAL_EVENT_TYPES:
        _check_terminal(state, kind, payload)


def _check_state_changed(state: RunLogState, payload: dict[str, JsonValue]) -> None:
    source = _STATE_BY_VALUE.get(str(payload.get("from_state")))
    target = _STATE_BY_VALUE.get(str(payload.get("to_state")))
    if source is None or target is None:
        raise _fail(
            state,
            f"state_changed payload needs known from_state/to_state, got "
            f"{payload.get('from_state')!r} -> {payload.get('to_state')!r}",
        )
    if source is not state.state:
        raise _fail(
            state,
            f"state_changed from {source.value} but the run is in {state.state.value}",
        )
    try:
        validate_transition(source, target)
    except InvalidStateTransitionError as exc:
        raise _fail(state, str(exc)) from None


_INPUT_KINDS = ("approval", "question")
_ANSWERABLE = frozenset({RunState.PAUSED, RunState.APPROVAL_PENDING})


def _check_input_request(state: RunLogState, payload: dict[str, JsonValue]) -> None:
    call_id = payload.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _fail(state, "human_input_requested requires a tool_call_id")
    if payload.get("kind") not in _INPUT_KINDS:
        raise _fail(
            state,
            f"human_input_requested kind must be 'approval' or 'question', got "
            f"{payload.get('kind')!r}",
        )
    if call_id in state.requested_inputs and call_id not in state.answered_inputs:
        raise _fail(state, f"tool call {call_id!r} already asked a person (unanswered)")


def _check_input_answer(state: RunLogState, payload: dict[str, JsonValue]) -> None:
    call_id = payload.get("tool_call_id")
    if not isinstance(call_id, str) or call_id not in state.requested_inputs:
        raise _fail(state, f"human_input_received for tool call {call_id!r}, which asked nobody")
    if call_id in state.answered_inputs:
        raise _fail(state, f"tool call {call_id!r} was already answered")
    if state.state not in _ANSWERABLE:
        raise _fail(
            state,
            f"an answer can be recorded only while the run waits for it (paused), "
            f"not in {state.state.value}",
        )


def _check_terminal(state: RunLogState, kind: EventType, payload: dict[str, JsonValue]) -> None:
    try:
        run_state = RunState(str(payload.get("state")))
        raw_reason = payload.get("stop_reason")
        reason = StopReason(str(raw_reason)) if raw_reason is not None else None
        validate_terminal_outcome(run_state, reason)
    except (ValueError, InvalidStateTransitionError) as exc:
        raise _fail(state, f"{kind.value} has an invalid outcome: {exc}") from None
    if TERMINAL_EVENT_FOR_STATE.get(run_state) is not kind:
        raise _fail(state, f"{kind.value} cannot carry state {run_state.value}")
    if kind is EventType.RUN_COMPLETED and not state.model_responded:
        raise _fail(state, "run_completed requires a prior model_responded")
    if reason is not None and reason in MODEL_OUTCOME_REASONS and not state.model_responded:
        raise _fail(state, f"{kind.value} with {reason.value} requires a prior model_responded")


__all__ = [
    "TERMINAL_EVENT_FOR_STATE",
    "TERMINAL_EVENT_TYPES",
    "AgentEvent",
    "EventType",
    "RunLogState",
    "validate_event_append",
]
