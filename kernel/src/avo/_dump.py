"""``response.model_dump(mode="json")`` for the run loop, built directly.

The loop dumps every model response into its MODEL_RESPONDED payload (and a
FakeProvider its whole script into its snapshot). pydantic's serializer walks
``JsonValue`` fields through Python callbacks; this builds the same dict from
the validated fields in about a quarter of the time. Anything outside the
plain shapes (a subclass, a value that is not JSON data) falls back to
``model_dump`` itself, so the result is always equal to it
(``kernel/tests/test_dump.py`` holds them equal). A tool result keeps
``model_dump``: its two datetimes format faster in pydantic than in Python.
"""

from __future__ import annotations

from typing import Any

from avo.exceptions import AvoError
from avo.models import ModelResponse, TokenUsage, ToolCall


class _NotPlain(AvoError):
    """A value the direct path does not handle: use model_dump (never leaves this module)."""


def json_data(value: Any) -> Any:
    """A copy of JSON data (dicts with str keys, lists, str/int/float/bool/None)."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            out[key] = json_data(item)
        return out
    if kind is list:
        return [json_data(item) for item in value]
    raise _NotPlain


def _usage(usage: TokenUsage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    if type(usage) is not TokenUsage:
        raise _NotPlain
    fields = usage.__dict__
    return {"input_tokens": fields["input_tokens"], "output_tokens": fields["output_tokens"]}


def response_json(response: ModelResponse) -> dict[str, Any]:
    """``response.model_dump(mode="json")``."""
    try:
        if type(response) is not ModelResponse:
            raise _NotPlain
        fields = response.__dict__
        call = fields["tool_call"]
        if call is not None:
            if type(call) is not ToolCall:
                raise _NotPlain
            inner = call.__dict__
            call = {
                "tool_call_id": inner["tool_call_id"],
                "name": inner["name"],
                "arguments": json_data(inner["arguments"]),
            }
        return {
            "response_id": fields["response_id"],
            "content": fields["content"],
            "tool_call": call,
            "usage": _usage(fields["usage"]),
        }
    except _NotPlain:
        return response.model_dump(mode="json")


__all__ = ["json_data", "response_json"]
