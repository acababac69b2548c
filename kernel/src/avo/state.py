"""RunState / StopReason enums and the transition table."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from avo.exceptions import InvalidStateTransitionError


class RunState(StrEnum):
    """Where a run is in the state machine."""

    CREATED = "created"
    MODEL_PENDING = "model_pending"
    DECISION_RECEIVED = "decision_received"
    TOOL_PENDING = "tool_pending"
    APPROVAL_PENDING = "approval_pending"
    TOOL_EXECUTING = "tool_executing"
    OBSERVATION_RECORDED = "observation_recorded"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    STOPPED = "stopped"
    CANCELLED = "cancelled"


class StopReason(StrEnum):
    """Why a run ended. Every terminal run has exactly one."""

    COMPLETED = "completed"
    MAX_STEPS = "max_steps"
    MAX_RUNTIME = "max_runtime"
    TOKEN_BUDGET_EXCEEDED = "token_budget_exceeded"
    REPEATED_ACTION = "repeated_action"
    NO_PROGRESS = "no_progress"
    CONSECUTIVE_ERRORS = "consecutive_errors"
    POLICY_DENIED = "policy_denied"
    USER_CANCELLED = "user_cancelled"
    PROVIDER_ERROR = "provider_error"
    TOOL_ERROR = "tool_error"
    INVALID_MODEL_RESPONSE = "invalid_model_response"
    INTERNAL_ERROR = "internal_error"
    OUTPUT_TRUNCATED = "output_truncated"
    """The final answer was cut off at the output-token limit (after any continuations)."""
    MODEL_REFUSED = "model_refused"
    """The model declined to answer, or the vendor's content filter withheld the answer."""


TERMINAL_STATES: frozenset[RunState] = frozenset(
    {RunState.COMPLETED, RunState.FAILED, RunState.STOPPED, RunState.CANCELLED}
)

_ENDINGS = frozenset({RunState.FAILED, RunState.STOPPED, RunState.CANCELLED})
_WORKING = (
    RunState.CREATED,
    RunState.MODEL_PENDING,
    RunState.DECISION_RECEIVED,
    RunState.TOOL_PENDING,
    RunState.APPROVAL_PENDING,
    RunState.TOOL_EXECUTING,
    RunState.OBSERVATION_RECORDED,
)

_ALLOWED_TRANSITIONS: Mapping[RunState, frozenset[RunState]] = {
    RunState.CREATED: frozenset(
        {RunState.MODEL_PENDING, RunState.PAUSED, RunState.FAILED, RunState.CANCELLED}
    ),
    RunState.MODEL_PENDING: frozenset({RunState.DECISION_RECEIVED, RunState.PAUSED}) | _ENDINGS,
    # DECISION_RECEIVED -> MODEL_PENDING: the model is asked again without a tool
    # call in between (a truncated answer continues; an answer the output schema
    # refused is retried).
    RunState.DECISION_RECEIVED: frozenset(
        {RunState.TOOL_PENDING, RunState.MODEL_PENDING, RunState.COMPLETED, RunState.PAUSED}
    )
    | _ENDINGS,
    RunState.TOOL_PENDING: frozenset({RunState.APPROVAL_PENDING, RunState.PAUSED}) | _ENDINGS,
    RunState.APPROVAL_PENDING: frozenset({RunState.TOOL_EXECUTING, RunState.PAUSED}) | _ENDINGS,
    RunState.TOOL_EXECUTING: frozenset({RunState.OBSERVATION_RECORDED, RunState.PAUSED}) | _ENDINGS,
    RunState.OBSERVATION_RECORDED: frozenset({RunState.MODEL_PENDING, RunState.PAUSED}) | _ENDINGS,
    RunState.PAUSED: frozenset(_WORKING) | _ENDINGS,
    RunState.COMPLETED: frozenset(),
    RunState.FAILED: frozenset(),
    RunState.STOPPED: frozenset(),
    RunState.CANCELLED: frozenset(),
}

_STOP_REASONS_BY_STATE: Mapping[RunState, frozenset[StopReason]] = {
    RunState.COMPLETED: frozenset({StopReason.COMPLETED}),
    RunState.STOPPED: frozenset(
        {
            StopReason.MAX_STEPS,
            StopReason.MAX_RUNTIME,
            StopReason.TOKEN_BUDGET_EXCEEDED,
            StopReason.REPEATED_ACTION,
            StopReason.NO_PROGRESS,
            StopReason.CONSECUTIVE_ERRORS,
            StopReason.POLICY_DENIED,
            StopReason.OUTPUT_TRUNCATED,
            StopReason.MODEL_REFUSED,
        }
    ),
    RunState.FAILED: frozenset(
        {
            StopReason.PROVIDER_ERROR,
            StopReason.TOOL_ERROR,
            StopReason.INVALID_MODEL_RESPONSE,
            StopReason.INTERNAL_ERROR,
        }
    ),
    RunState.CANCELLED: frozenset({StopReason.USER_CANCELLED}),
}


MODEL_OUTCOME_REASONS: frozenset[StopReason] = frozenset(
    {StopReason.OUTPUT_TRUNCATED, StopReason.MODEL_REFUSED}
)
"""Stop reasons that describe a model answer: a run may end with them only after one."""


STATE_VALUE: dict[RunState, str] = {state: state.value for state in RunState}
"""Each state's string value (a dict lookup: cheaper than the enum's ``.value`` property)."""


def is_terminal(state: RunState) -> bool:
    """Return True for COMPLETED, FAILED, STOPPED and CANCELLED."""
    return state in TERMINAL_STATES


def allowed_transitions(state: RunState) -> frozenset[RunState]:
    """Return the states ``state`` may move to."""
    return _ALLOWED_TRANSITIONS[state]


def validate_transition(current: RunState, target: RunState) -> None:
    """Raise InvalidStateTransitionError unless ``current -> target`` is in the table."""
    if target not in _ALLOWED_TRANSITIONS[current]:
        allowed = ", ".join(sorted(s.value for s in _ALLOWED_TRANSITIONS[current])) or "none"
        raise InvalidStateTransitionError(
            f"invalid state transition {current.value} -> {target.value} "
            f"(allowed from {current.value}: {allowed})"
        )


def validate_terminal_outcome(state: RunState, reason: StopReason | None) -> None:
    """Raise InvalidStateTransitionError unless a terminal state and its stop reason agree."""
    if state not in TERMINAL_STATES:
        if reason is not None:
            raise InvalidStateTransitionError(
                f"non-terminal state {state.value} cannot carry stop reason {reason.value}"
            )
        return
    permitted = _STOP_REASONS_BY_STATE[state]
    if reason is None or reason not in permitted:
        names = ", ".join(sorted(r.value for r in permitted))
        shown = reason.value if reason is not None else "None"
        raise InvalidStateTransitionError(
            f"terminal state {state.value} does not permit stop reason {shown} (permitted: {names})"
        )


LEGAL_MOVES: frozenset[tuple[str, str]] = frozenset(
    (source.value, target.value)
    for source, targets in _ALLOWED_TRANSITIONS.items()
    for target in targets
)
"""Every allowed (from_state, to_state) pair by value: the fast path of event validation."""

__all__ = [
    "LEGAL_MOVES",
    "MODEL_OUTCOME_REASONS",
    "STATE_VALUE",
    "TERMINAL_STATES",
    "RunState",
    "StopReason",
    "allowed_transitions",
    "is_terminal",
    "validate_terminal_outcome",
    "validate_transition",
]
