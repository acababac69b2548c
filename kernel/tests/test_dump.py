"""avo._dump.response_json is model_dump(mode="json"), key order and floats included."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from avo._dump import compact, json_data, response_json
from avo.models import FinishReason, ModelResponse, TokenUsage, ToolCall

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
