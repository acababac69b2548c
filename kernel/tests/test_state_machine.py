"""The transition table and terminal-outcome agreement."""

from __future__ import annotations

import itertools

import pytest

from avo.exceptions import InvalidStateTransitionError
from avo.state import (
    TERMINAL_STATES,
    RunState,
    StopReason,
    allowed_transitions,
    is_terminal,
    validate_terminal_outcome,
    validate_transition,
)

ENDINGS = {RunState.FAILED, RunState.STOPPED, RunState.CANCELLED}
WORKING = [
    RunState.CREATED,
    RunState.MODEL_PENDING,
    RunState.DECISION_RECEIVED,
    RunState.TOOL_PENDING,
    RunState.APPROVAL_PENDING,
    RunState.TOOL_EXECUTING,
    RunState.OBSERVATION_RECORDED,
]
TABLE = {
    RunState.CREATED: {
        RunState.MODEL_PENDING,
        RunState.PAUSED,
        RunState.FAILED,
        RunState.CANCELLED,
    },
    RunState.MODEL_PENDING: {RunState.DECISION_RECEIVED, RunState.PAUSED} | ENDINGS,
    # -> MODEL_PENDING: a truncated answer continues, an answer the schema refused is retried
    RunState.DECISION_RECEIVED: {
        RunState.TOOL_PENDING,
        RunState.MODEL_PENDING,
        RunState.COMPLETED,
        RunState.PAUSED,
    }
    | ENDINGS,
    RunState.TOOL_PENDING: {RunState.APPROVAL_PENDING, RunState.PAUSED} | ENDINGS,
    RunState.APPROVAL_PENDING: {RunState.TOOL_EXECUTING, RunState.PAUSED} | ENDINGS,
    RunState.TOOL_EXECUTING: {RunState.OBSERVATION_RECORDED, RunState.PAUSED} | ENDINGS,
    RunState.OBSERVATION_RECORDED: {RunState.MODEL_PENDING, RunState.PAUSED} | ENDINGS,
    RunState.PAUSED: set(WORKING) | ENDINGS,
    RunState.COMPLETED: set(),
    RunState.FAILED: set(),
    RunState.STOPPED: set(),
    RunState.CANCELLED: set(),
}
ALLOWED = [(a, b) for a, targets in TABLE.items() for b in sorted(targets)]
FORBIDDEN = [(a, b) for a, b in itertools.product(RunState, RunState) if b not in TABLE[a]]


def test_enums_have_the_reference_members() -> None:
    assert len(RunState) == 12
    assert len(StopReason) == 15  # the reference's 13, OUTPUT_TRUNCATED, MODEL_REFUSED
    assert {s.value for s in TERMINAL_STATES} == {"completed", "failed", "stopped", "cancelled"}


@pytest.mark.parametrize(("source", "target"), ALLOWED)
def test_every_allowed_transition_passes(source: RunState, target: RunState) -> None:
    validate_transition(source, target)
    assert target in allowed_transitions(source)


@pytest.mark.parametrize(("source", "target"), FORBIDDEN[::3])
def test_forbidden_transitions_raise(source: RunState, target: RunState) -> None:
    with pytest.raises(InvalidStateTransitionError, match="invalid state transition"):
        validate_transition(source, target)


def test_terminal_states_allow_nothing() -> None:
    for state in TERMINAL_STATES:
        assert is_terminal(state)
        assert allowed_transitions(state) == frozenset()


@pytest.mark.parametrize(
    ("state", "reasons"),
    [
        (RunState.COMPLETED, {StopReason.COMPLETED}),
        (
            RunState.STOPPED,
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
            },
        ),
        (
            RunState.FAILED,
            {
                StopReason.PROVIDER_ERROR,
                StopReason.TOOL_ERROR,
                StopReason.INVALID_MODEL_RESPONSE,
                StopReason.INTERNAL_ERROR,
            },
        ),
        (RunState.CANCELLED, {StopReason.USER_CANCELLED}),
    ],
)
def test_terminal_outcome_agreement(state: RunState, reasons: set[StopReason]) -> None:
    for reason in StopReason:
        if reason in reasons:
            validate_terminal_outcome(state, reason)
        else:
            with pytest.raises(InvalidStateTransitionError, match="does not permit"):
                validate_terminal_outcome(state, reason)
    with pytest.raises(InvalidStateTransitionError):
        validate_terminal_outcome(state, None)


def test_non_terminal_state_cannot_carry_a_stop_reason() -> None:
    validate_terminal_outcome(RunState.MODEL_PENDING, None)
    with pytest.raises(InvalidStateTransitionError):
        validate_terminal_outcome(RunState.MODEL_PENDING, StopReason.MAX_STEPS)
