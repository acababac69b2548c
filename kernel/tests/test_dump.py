"""avo._dump.response_json is model_dump(mode="json"), key order and floats included."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from avo._dump import json_data, response_json
from avo.models import ModelResponse, TokenUsage, ToolCall

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


@given(
    content=st.none() | st.text(max_size=20),
    arguments=st.dictionaries(st.text(max_size=6), _json, max_size=5),
    usage=_usage,
)
def test_response_json_is_model_dump(
    content: str | None, arguments: dict[str, Any], usage: Any
) -> None:
    if content is None:
        response = ModelResponse(tool_call=ToolCall(name="tool", arguments=arguments), usage=usage)
    else:
        response = ModelResponse(content=content, usage=usage)
    dumped = response_json(response)
    assert _same(dumped, response.model_dump(mode="json"))
    if response.tool_call is not None:  # a copy: the payload does not alias the model
        assert dumped["tool_call"]["arguments"] is not response.tool_call.arguments


def test_what_is_not_plain_json_goes_through_model_dump() -> None:
    import pytest

    from avo._dump import _NotPlain

    class Wider(ModelResponse):
        note: str = "x"

    wide = Wider(content="hi")
    assert response_json(wide) == wide.model_dump(mode="json") and "note" in response_json(wide)
    for odd in ((1, 2), {1: "x"}, {"a"}, b"x"):
        with pytest.raises(_NotPlain):  # response_json then uses model_dump
            json_data({"value": odd})


@given(_json)
def test_json_data_copies_json(value: Any) -> None:
    assert _same(json_data(value), value)
