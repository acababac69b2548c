"""The OpenAI Responses API (``POST {base_url}/responses``) and its adapter.

The run's event log is the conversation's state: every request carries the
whole transcript as input items and is sent with ``store: false``, never a
``previous_response_id``. Reasoning models return ``reasoning`` output items;
with ``include: ["reasoning.encrypted_content"]`` each carries the model's
encrypted reasoning, which the adapter keeps verbatim as a thinking block
tagged ``openai-responses`` and sends back, unchanged and in place, on later
requests (also after a resume in a new process, since it travels in the
recorded transcript).

Input items: ``system``/``user``/``assistant`` messages (media as
``input_image`` / ``input_file`` parts), ``function_call`` items for the
recorded tool calls and ``function_call_output`` items for their results.
Streaming reads the ``response.*`` server-sent events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from avo.exceptions import ProviderError
from avo.models import FinishReason, ModelRequest, ModelResponse, TokenUsage, ToolCall, new_id
from avo_providers.base_http import HTTPProvider, ProviderConfig
from avo_providers.http_common import (
    decode_json,
    iter_sse_events,
    malformed,
    parse_tool_arguments,
    redact_text,
    require_tool_name,
)
from avo_providers.openai_compatible import response_format
from avo_providers.responses_items import (
    SOURCE,
    ToolChoice,
    order_block,
    responses_input,
    responses_tools,
    tool_choice_value,
)

if TYPE_CHECKING:
    import httpx

    from avo.providers.streaming import ModelChunk

INCOMPLETE_FINISH: dict[str, FinishReason] = {
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}
"""``incomplete_details.reason`` values of a response that stopped early."""

FINAL_ERROR_CODES = frozenset(
    {
        "context_length_exceeded",
        "invalid_prompt",
        "invalid_image",
        "invalid_image_format",
        "invalid_base64_image",
        "invalid_image_url",
        "image_too_large",
        "image_too_small",
        "image_parse_error",
        "image_content_policy_violation",
        "invalid_image_mode",
        "image_file_too_large",
        "unsupported_image_media_type",
        "empty_image_file",
        "failed_to_download_image",
        "image_file_not_found",
    }
)
"""Error codes of a failed response that trying again cannot fix (the input is wrong)."""


# ----------------------------------------------------------------- request
def build_responses_payload(
    request: ModelRequest,
    *,
    model: str,
    max_output_tokens: int,
    stream: bool,
    tool_choice: ToolChoice = "auto",
    reasoning_effort: str | None = None,
    reasoning_summary: str | None = None,
    reasoning_model: bool = True,
) -> dict[str, Any]:
    """A Responses request body (stateless: ``store`` false, reasoning sent back in ``input``).

    ``reasoning_model``: ask for the encrypted reasoning (``include``); False for
    models the catalog knows do not reason, which return none.
    """
    payload: dict[str, Any] = {
        "model": model,
        "input": responses_input(request.messages),
        "max_output_tokens": max_output_tokens,
        "store": False,
    }
    if reasoning_model:
        payload["include"] = ["reasoning.encrypted_content"]
    if request.tools:
        payload["tools"] = responses_tools(request.tools)
        payload["tool_choice"] = tool_choice_value(tool_choice, request.tools)
        payload["parallel_tool_calls"] = True
    if request.output_schema is not None:
        spec = response_format(request.output_schema)
        payload["text"] = {"format": {"type": "json_schema", **spec["json_schema"]}}
    reasoning = {
        key: value
        for key, value in (("effort", reasoning_effort), ("summary", reasoning_summary))
        if value
    }
    if reasoning:
        payload["reasoning"] = reasoning
    if request.cache:
        payload["prompt_cache_key"] = request.run_id  # one run's requests share a cache
    if stream:
        payload["stream"] = True
    return payload


# ----------------------------------------------------------------- response
def responses_usage(raw: Any) -> TokenUsage | None:
    """``usage`` with its cached-input and reasoning breakdowns."""
    if not isinstance(raw, dict):
        return None
    cached = raw.get("input_tokens_details")
    reasoning = raw.get("output_tokens_details")
    return TokenUsage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(cached.get("cached_tokens") or 0) if isinstance(cached, dict) else 0,
        reasoning_tokens=(
            int(reasoning.get("reasoning_tokens") or 0) if isinstance(reasoning, dict) else 0
        ),
    )


def failure(vendor: str, error: Any, what: str = "response failed") -> ProviderError:
    """The error for a failed response (or a stream's ``error`` event).

    Retryable unless its code says the input itself is wrong (too long for the
    context window, a bad image, ...).
    """
    error = error if isinstance(error, dict) else {"message": str(error)}
    code = str(error.get("code") or error.get("type") or "")
    detail = redact_text(str(error.get("message") or "no error detail"))
    if code == "context_length_exceeded":
        return ProviderError(
            f"{vendor} {what} ({code}): {detail}; shorten the input or set [context] window "
            "so older turns are compacted",
            retryable=False,
        )
    retryable = code not in FINAL_ERROR_CODES
    return ProviderError(f"{vendor} {what} ({code or 'error'}): {detail}", retryable=retryable)


def _finish(data: dict[str, Any], has_calls: bool, refused: bool) -> FinishReason:
    if data.get("status") == "incomplete":
        reason = (data.get("incomplete_details") or {}).get("reason")
        return INCOMPLETE_FINISH.get(str(reason), FinishReason.UNKNOWN)
    if has_calls:
        return FinishReason.TOOL_CALLS
    return FinishReason.REFUSAL if refused else FinishReason.STOP


def parse_responses_response(
    data: Any, *, vendor: str = "OpenAI", source: str = SOURCE
) -> ModelResponse:
    """A Responses ``response`` object as a ModelResponse (every function call, in order)."""
    if not isinstance(data, dict):
        raise malformed(vendor, f"expected a JSON object, got {type(data).__name__}")
    if data.get("status") == "failed" or (data.get("error") and not data.get("output")):
        raise failure(vendor, data.get("error") or {"message": "status failed"})
    output = data.get("output")
    if not isinstance(output, list):
        raise malformed(vendor, "no 'output' list in the response")
    texts: list[str] = []
    refusals: list[str] = []
    thinking: list[dict[str, Any]] = []
    raw_calls: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "reasoning":
            thinking.append({"type": "reasoning", "item": item, "source": source})
        elif kind == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
                elif part.get("type") == "refusal":
                    refusals.append(str(part.get("refusal") or ""))
        elif kind == "function_call":
            raw_calls.append(item)
    order = order_block(output, source)
    if order is not None:
        thinking.append(order)
    finish = _finish(data, bool(raw_calls), bool(refusals))
    usage = responses_usage(data.get("usage"))
    response_id = str(data.get("id") or new_id())
    calls = [_call(vendor, raw, finish) for raw in raw_calls]
    if calls:
        return ModelResponse(
            response_id=response_id,
            tool_calls=calls,
            usage=usage,
            finish_reason=finish,
            thinking=thinking,
        )
    return ModelResponse(
        response_id=response_id,
        content="".join(texts) + "".join(refusals),
        usage=usage,
        finish_reason=finish,
        thinking=thinking,
    )


def _call(vendor: str, raw: dict[str, Any], finish: FinishReason) -> ToolCall:
    name = require_tool_name(vendor, raw.get("name"))
    try:
        arguments = parse_tool_arguments(vendor, raw.get("arguments"), name)
    except ProviderError:
        if finish is not FinishReason.LENGTH:
            raise
        raise malformed(
            vendor,
            f"tool call {name!r} was cut off at the output-token limit "
            "(incomplete: max_output_tokens) before its arguments were complete; "
            "raise the provider's max_completion_tokens",
        ) from None
    call_id = raw.get("call_id")
    if call_id:
        return ToolCall(tool_call_id=str(call_id), name=name, arguments=arguments)
    return ToolCall(name=name, arguments=arguments)


# ----------------------------------------------------------------- stream
class _StreamState:
    """What a Responses stream has said so far."""

    def __init__(self) -> None:
        self.response_id: str | None = None
        self.calls: set[int] = set()
        self.arguments_seen: set[int] = set()
        self.refused = False
        self.ended = False
        self.done: dict[int, dict[str, Any]] = {}
        """Finished output items by ``output_index``."""


def _chunks_of(
    vendor: str, kind: str, obj: dict[str, Any], state: _StreamState, source: str
) -> list[ModelChunk]:
    """The normalized chunks of one ``response.*`` event."""
    from avo.providers.streaming import ModelChunk

    rid = state.response_id
    if kind in ("response.created", "response.in_progress"):
        state.response_id = state.response_id or (obj.get("response") or {}).get("id")
        return []
    if kind == "response.output_text.delta":
        return [ModelChunk(text=str(obj.get("delta") or ""), response_id=rid)]
    if kind == "response.refusal.delta":
        state.refused = True
        return [ModelChunk(text=str(obj.get("delta") or ""), response_id=rid)]
    if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        return [ModelChunk(thought=str(obj.get("delta") or ""), response_id=rid)]
    index = obj.get("output_index")
    if kind == "response.output_item.added":
        item = obj.get("item") or {}
        if item.get("type") != "function_call" or not isinstance(index, int):
            return []
        state.calls.add(index)
        delta: dict[str, Any] = {"index": index, "id": item.get("call_id")}
        delta["name"] = item.get("name")
        if item.get("arguments"):
            state.arguments_seen.add(index)
            delta["arguments"] = item["arguments"]
        return [ModelChunk(tool_call_delta=delta, response_id=rid)]
    if kind == "response.function_call_arguments.delta" and isinstance(index, int):
        state.arguments_seen.add(index)
        delta = {"index": index, "arguments": str(obj.get("delta") or "")}
        return [ModelChunk(tool_call_delta=delta, response_id=rid)]
    if kind == "response.output_item.done":
        item = obj.get("item") or {}
        if isinstance(index, int) and isinstance(item, dict):
            state.done[index] = item
        if item.get("type") == "reasoning":
            block = {"type": "reasoning", "item": item, "source": source}
            return [ModelChunk(thinking_block=block, response_id=rid)]
        if item.get("type") == "function_call" and isinstance(index, int):
            # The finished item has the call's id and name even when its announcement
            # did not (or never came); the assembler keeps the first of each it sees.
            state.calls.add(index)
            delta = {"index": index, "id": item.get("call_id"), "name": item.get("name")}
            chunks = [ModelChunk(tool_call_delta=delta, response_id=rid)]
            if index not in state.arguments_seen and item.get("arguments"):
                state.arguments_seen.add(index)
                delta = {"index": index, "arguments": str(item["arguments"])}
                chunks.append(ModelChunk(tool_call_delta=delta, response_id=rid))
            return chunks
        return []
    if kind in ("response.completed", "response.incomplete"):
        response = obj.get("response") or {}
        state.ended = True
        finish = _finish(response, bool(state.calls), state.refused)
        chunks = [ModelChunk(finish_reason=finish.value, response_id=rid)]
        output = response.get("output") or [state.done[i] for i in sorted(state.done)]
        order = order_block(output, source)
        if order is not None:
            chunks.append(ModelChunk(thinking_block=order, response_id=rid))
        usage = responses_usage(response.get("usage"))
        if usage is not None:
            chunks.append(ModelChunk(usage=usage, response_id=rid))
        return chunks
    if kind == "response.failed":
        raise failure(vendor, (obj.get("response") or {}).get("error") or {})
    if kind == "error":
        raise failure(
            vendor, obj.get("error") if isinstance(obj.get("error"), dict) else obj, "stream error"
        )
    return []


async def stream_responses_chunks(
    lines: AsyncIterator[str], *, vendor: str = "OpenAI", source: str = SOURCE
) -> AsyncIterator[ModelChunk]:
    """Normalized chunks from a Responses SSE stream; a stream cut before its end is an error."""
    state = _StreamState()
    async for event, data in iter_sse_events(lines):
        obj = decode_json(vendor, data)
        if not isinstance(obj, dict):
            raise malformed(vendor, f"stream event is not a JSON object: {data[:80]!r}")
        kind = str(obj.get("type") or event)
        for chunk in _chunks_of(vendor, kind, obj, state, source):
            yield chunk
        if state.ended:
            break
    if not state.ended:
        raise malformed(vendor, "the stream ended before response.completed")


# ----------------------------------------------------------------- adapter
ReasoningEffort = Literal["minimal", "low", "medium", "high"]


class OpenAIResponsesProvider(HTTPProvider):
    """OpenAI's Responses API, stateless: ``POST {base_url}/responses`` with ``store: false``."""

    name: ClassVar[str] = SOURCE
    vendor: ClassVar[str] = "OpenAI"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    api_style: ClassVar[str] = "openai-responses"
    supports_output_schema: ClassVar[bool] = True

    def __init__(
        self,
        config: ProviderConfig,
        max_completion_tokens: int = 1024,
        request_timeout_seconds: float = 30.0,
        *,
        client: httpx.AsyncClient | None = None,
        tool_choice: ToolChoice = "auto",
        reasoning_effort: str | None = None,
        reasoning_summary: str | None = None,
    ) -> None:
        super().__init__(config, max_completion_tokens, request_timeout_seconds, client=client)
        self.tool_choice = tool_choice
        self.reasoning_effort = reasoning_effort
        self.reasoning_summary = reasoning_summary

    def headers(self) -> dict[str, str]:
        """Bearer auth when a key is configured."""
        if self.config.api_key:
            return {"authorization": f"Bearer {self.config.api_key}"}
        return {}

    def endpoint(self, *, stream: bool) -> str:
        """``/responses``, streaming or not."""
        return f"{self.base_url}/responses"

    def build_payload(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """A Responses body."""
        return build_responses_payload(
            request,
            model=self.model,
            max_output_tokens=self.max_completion_tokens,
            stream=stream,
            tool_choice=self.tool_choice,
            reasoning_effort=self.reasoning_effort,
            reasoning_summary=self.reasoning_summary,
            reasoning_model=self.capabilities.thinking is not False,
        )

    def parse_response(self, data: Any) -> ModelResponse:
        """A Responses ``response`` object."""
        return parse_responses_response(data, vendor=self.vendor)

    def parse_stream(self, lines: AsyncIterator[str]) -> AsyncIterator[ModelChunk]:
        """A Responses SSE stream."""
        return stream_responses_chunks(lines, vendor=self.vendor)


__all__ = [
    "SOURCE",
    "OpenAIResponsesProvider",
    "build_responses_payload",
    "failure",
    "parse_responses_response",
    "responses_input",
    "responses_tools",
    "responses_usage",
    "stream_responses_chunks",
]
