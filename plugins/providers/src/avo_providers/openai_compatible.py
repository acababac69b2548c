"""The OpenAI Chat Completions wire format and the OpenAI-compatible adapter.

Groq, Cerebras, OpenRouter and MiniMax (openai style) speak the same format and
subclass :class:`OpenAICompatibleProvider`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from avo.models import ModelRequest, ModelResponse, TokenUsage, ToolCall, new_id
from avo_providers.base_http import HTTPProvider
from avo_providers.http_common import (
    decode_json,
    iter_sse_events,
    json_safe_content,
    malformed,
    openai_tools,
    parse_tool_arguments,
    redact_text,
    require_tool_name,
    stream_error,
)

if TYPE_CHECKING:
    from avo.providers.streaming import ModelChunk, ThinkingStreamParser


def openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runtime's messages, cleaned to what strict OpenAI-compatible servers accept."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.get("tool_call_id"),
                    "content": json_safe_content(message.get("content")),
                }
            )
        elif role == "assistant" and message.get("tool_calls"):
            out.append(
                {
                    "role": "assistant",
                    "content": message.get("content"),
                    "tool_calls": message["tool_calls"],
                }
            )
        else:
            out.append({"role": role, "content": json_safe_content(message.get("content"))})
    return out


def build_openai_payload(
    request: ModelRequest,
    *,
    model: str,
    max_tokens: int,
    stream: bool,
    max_tokens_field: str = "max_tokens",
) -> dict[str, Any]:
    """A Chat Completions request body."""
    payload: dict[str, Any] = {
        "model": model,
        "messages": openai_messages(request.messages),
        max_tokens_field: max_tokens,
    }
    if request.tools:
        payload["tools"] = openai_tools(request.tools)
        payload["tool_choice"] = "auto"
    if stream:
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
    return payload


def _usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    return TokenUsage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
    )


def parse_openai_response(data: Any, *, vendor: str = "OpenAI") -> ModelResponse:
    """A Chat Completions response as a ModelResponse (the first tool call wins)."""
    from avo.providers.streaming import split_thinking

    if not isinstance(data, dict):
        raise malformed(vendor, f"expected a JSON object, got {type(data).__name__}")
    if "error" in data and "choices" not in data:
        raise malformed(vendor, redact_text(f"error object in a 200 response: {data['error']!r}"))
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise malformed(vendor, "no 'choices' in the response")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise malformed(vendor, "choice has no 'message'")
    usage = _usage(data.get("usage"))
    response_id = str(data.get("id") or new_id())
    tool_calls = message.get("tool_calls") or []
    if tool_calls:
        first = tool_calls[0]
        function = first.get("function") or {}
        name = require_tool_name(vendor, function.get("name"))
        call = ToolCall(
            tool_call_id=str(first.get("id") or new_id()),
            name=name,
            arguments=parse_tool_arguments(vendor, function.get("arguments"), name),
        )
        return ModelResponse(response_id=response_id, tool_call=call, usage=usage)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = json_safe_content(content)
    _, answer = split_thinking(content or "")
    return ModelResponse(response_id=response_id, content=answer, usage=usage)


def _normalize_openai_tool_delta(delta: dict[str, Any]) -> dict[str, Any]:
    function = delta.get("function") or {}
    normalized: dict[str, Any] = {"index": int(delta.get("index") or 0)}
    if delta.get("id"):
        normalized["id"] = delta["id"]
    if function.get("name"):
        normalized["name"] = function["name"]
    arguments = function.get("arguments")
    if arguments is not None:
        normalized["arguments"] = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return normalized


def text_chunks(
    parser: ThinkingStreamParser, text: str, response_id: str | None
) -> list[ModelChunk]:
    """Split streamed text into answer / thought chunks (``<think>`` handling)."""
    from avo.providers.streaming import ModelChunk

    chunks = []
    for channel, piece in parser.feed(text):
        if not piece:
            continue
        if channel == "text":
            chunks.append(ModelChunk(text=piece, response_id=response_id))
        else:
            chunks.append(ModelChunk(thought=piece, response_id=response_id))
    return chunks


def flush_chunks(parser: ThinkingStreamParser, response_id: str | None) -> list[ModelChunk]:
    """Whatever the ``<think>`` parser still holds at the end of a stream."""
    from avo.providers.streaming import ModelChunk

    chunks = []
    for channel, piece in parser.flush():
        if piece and channel == "text":
            chunks.append(ModelChunk(text=piece, response_id=response_id))
        elif piece:
            chunks.append(ModelChunk(thought=piece, response_id=response_id))
    return chunks


def parse_openai_stream_payload(
    obj: dict[str, Any], parser: ThinkingStreamParser, *, vendor: str = "OpenAI"
) -> tuple[list[ModelChunk], bool]:
    """Chunks from one decoded ``chat.completion.chunk``; second item: finish seen."""
    from avo.providers.streaming import ModelChunk

    if "error" in obj and not obj.get("choices"):
        raise stream_error(vendor, obj["error"])
    response_id = obj.get("id")
    chunks: list[ModelChunk] = []
    finished = False
    for choice in obj.get("choices") or []:
        if choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            chunks.append(ModelChunk(thought=reasoning, response_id=response_id))
        content = delta.get("content")
        if isinstance(content, str) and content:
            chunks.extend(text_chunks(parser, content, response_id))
        for tool_delta in delta.get("tool_calls") or []:
            chunks.append(
                ModelChunk(
                    tool_call_delta=_normalize_openai_tool_delta(tool_delta),
                    response_id=response_id,
                )
            )
        if choice.get("finish_reason"):
            finished = True
            chunks.append(
                ModelChunk(finish_reason=str(choice["finish_reason"]), response_id=response_id)
            )
    # Groq reports streamed usage under ``x_groq.usage`` in the last chunk.
    usage = _usage(obj.get("usage") or (obj.get("x_groq") or {}).get("usage"))
    if usage is not None:
        chunks.append(ModelChunk(usage=usage, response_id=response_id))
    return chunks, finished


async def stream_openai_chunks(
    lines: AsyncIterator[str], *, transport_name: str = "OpenAI"
) -> AsyncIterator[ModelChunk]:
    """Normalized chunks from an OpenAI SSE stream; a stream cut before the end is an error."""
    from avo.providers.streaming import ThinkingStreamParser

    parser = ThinkingStreamParser()
    finished = done = False
    response_id: str | None = None
    async for _event, data in iter_sse_events(lines):
        if data.strip() == "[DONE]":
            done = True
            break
        obj = decode_json(transport_name, data)
        if not isinstance(obj, dict):
            raise malformed(transport_name, f"stream event is not a JSON object: {data[:80]!r}")
        response_id = response_id or obj.get("id")
        chunks, saw_finish = parse_openai_stream_payload(obj, parser, vendor=transport_name)
        finished = finished or saw_finish
        for chunk in chunks:
            yield chunk
    for chunk in flush_chunks(parser, response_id):
        yield chunk
    if not (done or finished):
        raise malformed(transport_name, "the stream ended before [DONE] or a finish_reason")


class OpenAICompatibleProvider(HTTPProvider):
    """Any server speaking OpenAI Chat Completions: ``POST {base_url}/chat/completions``."""

    name: ClassVar[str] = "openai-compatible"
    vendor: ClassVar[str] = "OpenAI"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    max_tokens_field: ClassVar[str] = "max_completion_tokens"

    def headers(self) -> dict[str, str]:
        """Bearer auth when a key is configured."""
        if self.config.api_key:
            return {"authorization": f"Bearer {self.config.api_key}"}
        return {}

    def endpoint(self, *, stream: bool) -> str:
        """Chat Completions, streaming or not."""
        return f"{self.base_url}/chat/completions"

    def build_payload(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """A Chat Completions body."""
        return build_openai_payload(
            request,
            model=self.model,
            max_tokens=self.max_completion_tokens,
            stream=stream,
            max_tokens_field=self.max_tokens_field,
        )

    def parse_response(self, data: Any) -> ModelResponse:
        """A Chat Completions response."""
        return parse_openai_response(data, vendor=self.vendor)

    def parse_stream(self, lines: AsyncIterator[str]) -> AsyncIterator[ModelChunk]:
        """A Chat Completions SSE stream."""
        return stream_openai_chunks(lines, transport_name=self.vendor)


__all__ = [
    "OpenAICompatibleProvider",
    "build_openai_payload",
    "openai_messages",
    "parse_openai_response",
    "parse_openai_stream_payload",
    "stream_openai_chunks",
]
