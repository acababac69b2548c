"""Bad input is refused with the reference's messages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from avo import (
    Checkpoint,
    LoopPolicy,
    ModelRequest,
    ModelResponse,
    RunRecord,
    RunState,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from avo.exceptions import InvalidStateTransitionError
from avo.models import new_id

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_unknown_keys_are_refused_everywhere() -> None:
    with pytest.raises(ValidationError, match="extra"):
        LoopPolicy(max_step=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="extra"):
        TokenUsage(input_tokens=1, cached=2)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="extra"):
        ToolCall(name="x", args={})  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="extra"):
        ModelResponse.model_validate({"content": "a", "reasoning": "b"})


def test_policy_is_frozen_and_bounded() -> None:
    policy = LoopPolicy()
    with pytest.raises(ValidationError):
        policy.max_steps = 3  # type: ignore[misc]
    with pytest.raises(ValidationError, match="greater than 0"):
        LoopPolicy(max_steps=0)
    assert policy.max_steps == 20 and policy.max_runtime_seconds == 300


def test_naive_datetimes_are_refused() -> None:
    naive = datetime(2026, 1, 1)
    with pytest.raises(ValidationError, match="naive"):
        RunRecord(run_id="r", task="t", created_at=naive)
    with pytest.raises(ValidationError, match="naive"):
        ToolResult(
            tool_call_id="c", tool_name="t", success=True, started_at=naive, finished_at=naive
        )
    record = RunRecord(run_id="r", task="t", created_at=NOW, updated_at=NOW)
    with pytest.raises(ValidationError, match="naive"):
        record.updated_at = naive


def test_model_response_needs_exactly_one_of_content_or_tool_call() -> None:
    message = "model response must contain exactly one of content or tool_call"
    with pytest.raises(ValidationError, match=message):
        ModelResponse()
    with pytest.raises(ValidationError, match=message):
        ModelResponse(content="a", tool_call=ToolCall(name="x"))
    response = ModelResponse(content="done")
    assert response.is_final and response.response_id
    assert not ModelResponse(tool_call=ToolCall(name="x")).is_final


def test_tool_result_cannot_be_both_success_and_error() -> None:
    with pytest.raises(ValidationError, match="a successful tool result cannot contain an error"):
        ToolResult(
            tool_call_id="c",
            tool_name="t",
            success=True,
            error="boom",
            started_at=NOW,
            finished_at=NOW,
        )
    with pytest.raises(ValidationError, match="a failed tool result must contain an error"):
        ToolResult(tool_call_id="c", tool_name="t", success=False, started_at=NOW, finished_at=NOW)
    with pytest.raises(ValidationError, match="finished_at"):
        ToolResult(
            tool_call_id="c",
            tool_name="t",
            success=True,
            started_at=NOW,
            finished_at=NOW.replace(year=2025),
        )


def test_run_record_terminal_state_and_reason_must_agree() -> None:
    with pytest.raises(InvalidStateTransitionError, match="does not permit"):
        RunRecord(run_id="r", task="t", state=RunState.COMPLETED, stop_reason=StopReason.MAX_STEPS)
    with pytest.raises(InvalidStateTransitionError):
        RunRecord(run_id="r", task="t", state=RunState.FAILED)
    with pytest.raises(ValidationError):
        RunRecord(run_id="r", task="")


def test_token_usage_math_and_bounds() -> None:
    total = TokenUsage(input_tokens=2, output_tokens=3).plus(TokenUsage(input_tokens=1))
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (3, 3, 6)
    with pytest.raises(ValidationError):
        TokenUsage(input_tokens=-1)


def test_request_and_checkpoint_field_rules() -> None:
    with pytest.raises(ValidationError):
        ModelRequest(run_id="", step=1, messages=[])
    with pytest.raises(ValidationError):
        ModelRequest(run_id="r", step=0, messages=[])
    with pytest.raises(ValidationError, match="completed_tool_call_ids"):
        Checkpoint(  # type: ignore[call-arg]
            run_id="r",
            state=RunState.MODEL_PENDING,
            messages=[],
            next_step=1,
            token_usage=TokenUsage(),
            token_accounting_available=True,
            consecutive_errors=0,
            repeated_action_history=[],
            observation_fingerprints=[],
            model_response_fingerprints=[],
            progress_markers=[],
            user_state={},
            policy={},
            provider_metadata={},
            pending_response=None,
        )


def test_new_id_is_a_uuid4() -> None:
    import uuid

    value = new_id()
    assert uuid.UUID(value).version == 4
    assert value != new_id()
