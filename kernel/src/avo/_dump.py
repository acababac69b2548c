"""A model response as JSON for the run loop, built directly.

The loop dumps every model response into its MODEL_RESPONDED payload (and a
FakeProvider its whole script into its snapshot), in a compact form:
``model_dump(mode="json")`` without None fields and empty lists (a call's
``vendor_id``/``signature`` when it has none, an answer's empty ``tool_calls``,
no ``thinking``), which ``ModelResponse.model_validate`` reads back unchanged.
pydantic's serializer walks ``JsonValue`` fields through Python callbacks;
this builds the same dict from the validated fields in about a quarter of the
time. Anything outside the plain shapes (a subclass, a value that is not JSON
data) goes through ``model_dump`` and :func:`compact`, so the result is always
the same (``kernel/tests/test_dump.py`` holds them equal). A tool result
(:func:`tool_result_json`) is built the same way when its times are UTC, as the
runtime's clock makes them: ``isoformat()`` with ``Z`` for ``+00:00`` is what
pydantic writes.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from avo.exceptions import AvoError
from avo.models import FinishReason, ModelResponse, TokenUsage, ToolCall, ToolResult


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


def usage_json(usage: TokenUsage) -> dict[str, Any]:
    """``usage`` as JSON: input and output tokens, and the cache/reasoning counts when set."""
    try:
        return _usage(usage)
    except _NotPlain:
        dumped: dict[str, Any] = usage.model_dump(mode="json")
        return {k: v for k, v in dumped.items() if v or k in ("input_tokens", "output_tokens")}


def _usage(usage: TokenUsage) -> dict[str, Any]:
    if type(usage) is not TokenUsage:
        raise _NotPlain
    fields = usage.__dict__
    out = {"input_tokens": fields["input_tokens"], "output_tokens": fields["output_tokens"]}
    # The cache and reasoning breakdowns only when the vendor reported them (compact
    # events; a stored usage without them reads back as zeros).
    if fields["cache_read_tokens"]:
        out["cache_read_tokens"] = fields["cache_read_tokens"]
    if fields["cache_write_tokens"]:
        out["cache_write_tokens"] = fields["cache_write_tokens"]
    if fields["reasoning_tokens"]:
        out["reasoning_tokens"] = fields["reasoning_tokens"]
    return out


def response_json(response: ModelResponse) -> dict[str, Any]:
    """``response.model_dump(mode="json")`` without None fields and empty lists.

    The compact form each MODEL_RESPONDED event carries (and a FakeProvider
    snapshot): ``ModelResponse.model_validate`` reads it back unchanged.
    """
    try:
        if type(response) is not ModelResponse:
            raise _NotPlain
        fields = response.__dict__
        out: dict[str, Any] = {"response_id": fields["response_id"]}
        content = fields["content"]
        if content is not None:
            out["content"] = content
        calls = fields["tool_calls"]
        if calls:
            dumped = []
            for call in calls:
                if type(call) is not ToolCall:
                    raise _NotPlain
                inner = call.__dict__
                entry = {
                    "tool_call_id": inner["tool_call_id"],
                    "name": inner["name"],
                    "arguments": json_data(inner["arguments"]),
                }
                if inner["vendor_id"] is not None:
                    entry["vendor_id"] = inner["vendor_id"]
                if inner["signature"] is not None:
                    entry["signature"] = inner["signature"]
                dumped.append(entry)
            out["tool_calls"] = dumped
        usage = fields["usage"]
        if usage is not None:
            out["usage"] = _usage(usage)
        finish = fields["finish_reason"]
        if finish is not None:
            out["finish_reason"] = _FINISH_VALUE[finish]
        thinking = fields["thinking"]
        if thinking:
            out["thinking"] = [json_data(block) for block in thinking]
        if fields["provider"] is not None:
            out["provider"] = fields["provider"]
        if fields["model"] is not None:
            out["model"] = fields["model"]
        return out
    except _NotPlain:
        return compact(response.model_dump(mode="json"))


def tool_result_json(result: ToolResult) -> dict[str, Any]:
    """``result.model_dump(mode="json")``, built directly for the common result."""
    try:
        if type(result) is not ToolResult:
            raise _NotPlain
        fields = result.__dict__
        started, finished = fields["started_at"], fields["finished_at"]
        if started.tzinfo is not UTC or finished.tzinfo is not UTC:
            raise _NotPlain
        return {
            "tool_call_id": fields["tool_call_id"],
            "tool_name": fields["tool_name"],
            "success": fields["success"],
            "output": json_data(fields["output"]),
            "error": fields["error"],
            "started_at": started.isoformat()[:-6] + "Z",  # "+00:00" written as pydantic does
            "finished_at": finished.isoformat()[:-6] + "Z",
            "duration_ms": fields["duration_ms"],
        }
    except _NotPlain:
        dumped: dict[str, Any] = result.model_dump(mode="json")
        return dumped


def compact(dumped: dict[str, Any]) -> dict[str, Any]:
    """A response's ``model_dump(mode="json")`` in the compact form of :func:`response_json`."""
    out = {key: value for key, value in dumped.items() if value is not None and value != []}
    usage = out.get("usage")
    if isinstance(usage, dict):
        out["usage"] = {
            key: value
            for key, value in usage.items()
            if value or key in ("input_tokens", "output_tokens")
        }
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [
            {k: v for k, v in call.items() if v is not None or k not in _OPTIONAL_CALL_KEYS}
            if isinstance(call, dict)
            else call
            for call in calls
        ]
    return out


_OPTIONAL_CALL_KEYS = frozenset({"vendor_id", "signature"})


_FINISH_VALUE = {reason: reason.value for reason in FinishReason}


__all__ = ["compact", "json_data", "response_json", "tool_result_json", "usage_json"]
