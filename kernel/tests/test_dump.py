"""avo._dump.response_json is model_dump(mode="json"), key order and floats included."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from avo._dump import compact, json_data, response_json, tool_result_json
from avo.models import FinishReason, ModelResponse, TokenUsage, ToolCall, ToolResult

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
_usage = st.none() | st.builds(
    TokenUsage, input_tokens=st.integers(0, 10**9), output_tokens=st.integers(0, 10**9)
)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON text: key order, -0.0 and NaN included."""
    return json.dumps(a) == json.dumps(b)


_calls = st.lists(
    st.builds(
        ToolCall,
        name=st.just("tool"),
        arguments=st.dictionaries(st.text(max_size=6), _json, max_size=5),
        vendor_id=st.none() | st.text(min_size=1, max_size=6),
        signature=st.none() | st.text(max_size=6),
    ),
    min_size=1,
    max_size=3,
)


@given(
    content=st.none() | st.text(max_size=20),
    calls=_calls,
    usage=_usage,
    finish=st.none() | st.sampled_from(FinishReason),
    thinking=st.lists(st.dictionaries(st.text(max_size=6), _json, max_size=3), max_size=2),
)
def test_response_json_is_model_dump(
    content: str | None,
    calls: list[ToolCall],
    usage: Any,
    finish: FinishReason | None,
    thinking: list[dict[str, Any]],
) -> None:
    if content is None:
        response = ModelResponse(
            tool_calls=calls, usage=usage, finish_reason=finish, thinking=thinking
        )
    else:
        response = ModelResponse(
            content=content, usage=usage, finish_reason=finish, thinking=thinking
        )
    dumped = response_json(response)
    assert _same(dumped, compact(response.model_dump(mode="json")))
    assert ModelResponse.model_validate(dumped) == response  # the compact form reads back
    for call, entry in zip(response.tool_calls, dumped.get("tool_calls", []), strict=True):
        assert entry["arguments"] is not call.arguments  # a copy: no aliasing of the model


def test_the_compact_form_leaves_out_only_empty_fields() -> None:
    call = ToolCall(tool_call_id="c", name="t", arguments={"a": None})
    assert response_json(ModelResponse(response_id="r", tool_call=call)) == {
        "response_id": "r",
        "tool_calls": [{"tool_call_id": "c", "name": "t", "arguments": {"a": None}}],
    }
    full = ModelResponse(
        response_id="r",
        content="hi",
        usage=TokenUsage(input_tokens=1),
        finish_reason=FinishReason.LENGTH,
        thinking=[{"type": "thinking"}],
    )
    assert response_json(full) == {
        "response_id": "r",
        "content": "hi",
        "usage": {"input_tokens": 1, "output_tokens": 0},
        "finish_reason": "length",
        "thinking": [{"type": "thinking"}],
    }


def test_what_is_not_plain_json_goes_through_model_dump() -> None:
    import pytest

    from avo._dump import _NotPlain

    class Wider(ModelResponse):
        note: str = "x"

    wide = Wider(content="hi")
    assert response_json(wide) == compact(wide.model_dump(mode="json"))
    assert "note" in response_json(wide)
    for odd in ((1, 2), {1: "x"}, {"a"}, b"x"):
        with pytest.raises(_NotPlain):  # response_json then uses model_dump
            json_data({"value": odd})


@given(_json)
def test_json_data_copies_json(value: Any) -> None:
    assert _same(json_data(value), value)


_utc_times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@given(
    output=_json,
    started=_utc_times,
    extra=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=2)),
    duration=st.floats(min_value=0, max_value=1e9) | st.integers(0, 10**6),
    failed=st.booleans(),
)
def test_tool_result_json_is_model_dump(
    output: Any, started: datetime, extra: timedelta, duration: float, failed: bool
) -> None:
    result = ToolResult(
        tool_call_id="call-1",
        tool_name="echo",
        success=not failed,
        output=None if failed else output,
        error="it broke" if failed else None,
        started_at=started,
        finished_at=started + extra,
        duration_ms=duration,
    )
    assert _same(tool_result_json(result), result.model_dump(mode="json"))


def test_a_tool_result_in_another_zone_or_class_goes_through_model_dump() -> None:
    plus_two = timezone(timedelta(hours=2))
    other = ToolResult(
        tool_call_id="c",
        tool_name="t",
        success=True,
        output={"at": 1},
        started_at=datetime(2026, 1, 1, tzinfo=plus_two),
        finished_at=datetime(2026, 1, 1, 0, 0, 1, tzinfo=plus_two),
    )
    assert tool_result_json(other) == other.model_dump(mode="json")
    assert tool_result_json(other)["started_at"] == "2026-01-01T00:00:00+02:00"

    class Tagged(ToolResult):
        tag: str = "x"

    tagged = Tagged(
        tool_call_id="c",
        tool_name="t",
        success=True,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert tool_result_json(tagged) == tagged.model_dump(mode="json")
    assert tool_result_json(tagged)["tag"] == "x"
