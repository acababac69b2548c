"""Assembled call JSON and fingerprints equal what canonical_json of the whole value gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from avo.models import ModelResponse, ToolCall
from avo.progress import model_response_fingerprint
from avo.tools import call_json, canonical_fingerprint, canonical_json, tool_call_fingerprint

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(
    name=st.text(min_size=1),
    arguments=st.dictionaries(st.text(), json_values, max_size=4),
)
def test_call_json_and_fingerprints_match_the_canonical_forms(
    name: str, arguments: dict[str, Any]
) -> None:
    call = ToolCall(name=name, arguments=arguments)
    args_json, whole = call_json(call)
    assert args_json == canonical_json(arguments)
    assert whole == canonical_json({"name": name, "arguments": arguments})
    assert tool_call_fingerprint(call) == canonical_fingerprint(
        {"name": name, "arguments": arguments}
    )
    response = ModelResponse(tool_call=call)
    assert model_response_fingerprint(response) == canonical_fingerprint(
        {"content": None, "tool_call": {"name": name, "arguments": arguments}}
    )
    other = ToolCall(name="other", arguments={"x": [1, None]})
    both = ModelResponse(tool_calls=[call, other])  # every call of a turn counts
    assert model_response_fingerprint(both) == canonical_fingerprint(
        {
            "content": None,
            "tool_calls": [
                {"name": name, "arguments": arguments},
                {"name": "other", "arguments": {"x": [1, None]}},
            ],
        }
    )


def test_the_cache_follows_the_call_object() -> None:
    first = ToolCall(name="a", arguments={"n": 1})
    second = ToolCall(name="a", arguments={"n": 2})
    assert call_json(first)[0] == '{"n":1}'
    assert call_json(second)[0] == '{"n":2}'
    assert call_json(first)[0] == '{"n":1}'
    answer = ModelResponse(content="done")
    assert model_response_fingerprint(answer) == canonical_fingerprint(
        {"content": "done", "tool_call": None}
    )


@given(
    history=st.lists(st.sampled_from(["a", "b", "c"]), max_size=12),
    count=st.integers(min_value=-1, max_value=14),
)
def test_trailing_identical_is_the_plain_definition(history: list[str], count: int) -> None:
    from avo.progress import _trailing_identical

    tail = history[-count:] if count > 0 else []
    expected = count > 0 and len(history) >= count and all(item == tail[0] for item in tail)
    assert _trailing_identical(history, count) is expected
