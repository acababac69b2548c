"""The OpenAI Chat Completions wire format and the OpenAI-compatible adapter.

Groq, Cerebras, OpenRouter and MiniMax (openai style) speak the same format and
subclass :class:`OpenAICompatibleProvider`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from avo.exceptions import ProviderError
from avo.models import FinishReason, ModelRequest, ModelResponse, TokenUsage, ToolCall, new_id
from avo_providers.base_http import HTTPProvider
from avo_providers.http_common import (
    decode_json,
    iter_sse_events,
    json_safe_content,
    malformed,
    map_finish,
    openai_tools,
    own_thinking,
    parse_tool_arguments,
    redact_text,
    require_tool_name,
    stream_error,
    vendor_call_id,
    vendor_result_id,
)
from avo_providers.media import is_blocks, media_note, openai_chat_parts, text_only

OPENAI_FINISH: dict[str, FinishReason] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "refusal": FinishReason.REFUSAL,
}
"""Chat Completions ``finish_reason`` values (also Groq, Cerebras, OpenRouter, MiniMax)."""

if TYPE_CHECKING:
    from avo.providers.streaming import ModelChunk, ThinkingStreamParser


def _think_prefix(message: dict[str, Any], source: str | None) -> str:
    """``<think>...</think>`` for reasoning this vendor wants back in the content."""
    if source is None:
        return ""
    texts = [
        str(block.get("text", ""))
        for block in own_thinking(message, source)
        if block.get("type") == "think"
    ]
    return "".join(f"<think>{text}</think>" for text in texts if text)


def _reasoning_details(message: dict[str, Any], source: str | None) -> list[Any]:
    """The ``reasoning_details`` this vendor sent with the turn, to go back unchanged."""
    if source is None:
        return []
    details: list[Any] = []
    for block in own_thinking(message, source):
        if block.get("type") == "reasoning_details" and isinstance(block.get("details"), list):
            details.extend(block["details"])
    return details


def merge_reasoning_details(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Streamed ``reasoning_details`` fragments joined into whole entries.

    Fragments of one entry share its ``index``: their ``text`` and ``summary``
    pieces are concatenated, any other field keeps its last non-null value
    (the signature comes with the last fragment).
    """
    merged: dict[Any, dict[str, Any]] = {}
    for part in parts:
        entry = merged.setdefault(part.get("index", len(merged)), {})
        for key, value in part.items():
            if key in ("text", "summary") and isinstance(value, str):
                entry[key] = str(entry.get(key) or "") + value
            elif value is not None:
                entry[key] = value
    return list(merged.values())


def openai_messages(
    messages: list[dict[str, Any]],
    *,
    think_source: str | None = None,
    details_source: str | None = None,
) -> list[dict[str, Any]]:
    """The runtime's messages, cleaned to what strict OpenAI-compatible servers accept.

    Tool calls and results carry the vendor's own call ids. ``think_source``:
    the adapter whose ``<think>`` reasoning goes back inside the assistant
    content (MiniMax asks for it in multi-turn tool use). ``details_source``:
    the adapter whose ``reasoning_details`` go back on the assistant message,
    unchanged (OpenRouter asks for them with tool calls, signatures intact).
    """
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # media tools returned, sent after the batch's results
    for message in messages:
        role = message.get("role")
        if pending and role != "tool":
            out.append({"role": "user", "content": pending})
            pending = []
        if role == "tool":
            content = message.get("content")
            text = json_safe_content(content)
            if is_blocks(content):  # a tool message holds text only: the media follow it
                text = "\n".join(part for part in (text_only(content), media_note(content)) if part)
                pending.extend(
                    part for part in openai_chat_parts(content) if part["type"] != "text"
                )
            out.append({"role": "tool", "tool_call_id": vendor_result_id(message), "content": text})
        elif role == "user" and is_blocks(message.get("content")):
            out.append({"role": "user", "content": openai_chat_parts(message["content"])})
        elif role == "assistant" and message.get("tool_calls"):
            content = message.get("content")
            think = _think_prefix(message, think_source)
            if think:
                content = think + (content or "")
            sent: dict[str, Any] = {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {
                        "id": vendor_call_id(call),
                        "type": call.get("type", "function"),
                        "function": call.get("function"),
                    }
                    for call in message["tool_calls"]
                ],
            }
            details = _reasoning_details(message, details_source)
            if details:
                sent["reasoning_details"] = details
            out.append(sent)
        else:
            content = json_safe_content(message.get("content"))
            sent = {"role": role, "content": content}
            if role == "assistant":
                sent["content"] = _think_prefix(message, think_source) + content
                details = _reasoning_details(message, details_source)
                if details:
                    sent["reasoning_details"] = details
            out.append(sent)
    if pending:
        out.append({"role": "user", "content": pending})
    return out


def build_openai_payload(
    request: ModelRequest,
    *,
    model: str,
    max_tokens: int,
    stream: bool,
    max_tokens_field: str = "max_tokens",
    think_source: str | None = None,
    json_schema: bool = True,
    details_source: str | None = None,
) -> dict[str, Any]:
    """A Chat Completions request body.

    With ``request.output_schema`` the body asks for a JSON answer in that shape
    (``response_format`` json_schema, strict when the schema allows it);
    ``json_schema=False`` for servers that only know ``json_object``.
    """
    payload: dict[str, Any] = {
        "model": model,
        "messages": openai_messages(
            request.messages, think_source=think_source, details_source=details_source
        ),
        max_tokens_field: max_tokens,
    }
    if request.tools:
        payload["tools"] = openai_tools(request.tools)
        payload["tool_choice"] = "auto"
    if request.output_schema is not None:
        payload["response_format"] = response_format(request.output_schema, json_schema)
    if stream:
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
    return payload


def response_format(schema: dict[str, Any], json_schema: bool = True) -> dict[str, Any]:
    """The ``response_format`` asking for JSON in ``schema``'s shape (strict when it can be)."""
    from avo.tools import to_strict_schema

    if not json_schema:
        return {"type": "json_object"}
    name = str(schema.get("title") or "output")
    body = {key: value for key, value in schema.items() if key != "title"}
    strict = to_strict_schema(body)
    spec: dict[str, Any] = {"name": _schema_name(name), "schema": strict or body}
    spec["strict"] = strict is not None
    return {"type": "json_schema", "json_schema": spec}


def _schema_name(name: str) -> str:
    """A ``json_schema.name`` OpenAI accepts: letters, digits, ``_`` and ``-``, 64 at most."""
    cleaned = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)
    return cleaned[:64] or "output"


def _usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    # Cached prompt tokens (OpenAI caches long prompts by itself) and reasoning
    # tokens are parts of prompt_tokens / completion_tokens, reported in *_details.
    prompt = raw.get("prompt_tokens_details")
    completion = raw.get("completion_tokens_details")
    return TokenUsage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=int((prompt or {}).get("cached_tokens") or 0)
        if isinstance(prompt, dict)
        else 0,
        reasoning_tokens=int((completion or {}).get("reasoning_tokens") or 0)
        if isinstance(completion, dict)
        else 0,
    )


def parse_openai_response(
    data: Any,
    *,
    vendor: str = "OpenAI",
    think_source: str | None = None,
    details_source: str | None = None,
) -> ModelResponse:
    """A Chat Completions response as a ModelResponse (every tool call, in order).

    ``think_source``: keep the answer's ``<think>`` reasoning as a thinking block
    tagged with that adapter, to send back on later turns; ``details_source``:
    keep the message's ``reasoning_details`` the same way.
    """
    from avo.providers.streaming import split_thinking

    if not isinstance(data, dict):
        raise malformed(vendor, f"expected a JSON object, got {type(data).__name__}")
    if "error" in data and "choices" not in data:
        raise malformed(vendor, redact_text(f"error object in a 200 response: {data['error']!r}"))
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise malformed(vendor, "no 'choices' in the response")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise malformed(vendor, "choice has no 'message'")
    usage = _usage(data.get("usage"))
    response_id = str(data.get("id") or new_id())
    finish = map_finish(OPENAI_FINISH, choice.get("finish_reason"))
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = json_safe_content(content)
    thought, answer = split_thinking(content or "")
    thinking: list[dict[str, Any]] = (
        [{"type": "think", "text": thought, "source": think_source}]
        if thought and think_source
        else []
    )
    details = message.get("reasoning_details")
    if details_source and isinstance(details, list) and details:
        thinking.append({"type": "reasoning_details", "details": details, "source": details_source})
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        name = require_tool_name(vendor, function.get("name"))
        try:
            arguments = parse_tool_arguments(vendor, function.get("arguments"), name)
        except ProviderError:
            if finish is not FinishReason.LENGTH:
                raise
            raise malformed(
                vendor,
                f"tool call {name!r} was cut off at the output-token limit "
                "(finish_reason=length) before its arguments were complete; "
                "raise the provider's output-token limit",
            ) from None
        if raw.get("id"):
            calls.append(ToolCall(tool_call_id=str(raw["id"]), name=name, arguments=arguments))
        else:
            calls.append(ToolCall(name=name, arguments=arguments))
    if calls:
        return ModelResponse(
            response_id=response_id,
            tool_calls=calls,
            usage=usage,
            finish_reason=finish,
            thinking=thinking,
        )
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        answer, finish = refusal, FinishReason.REFUSAL
    return ModelResponse(
        response_id=response_id,
        content=answer,
        usage=usage,
        finish_reason=finish,
        thinking=thinking,
    )


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
    obj: dict[str, Any],
    parser: ThinkingStreamParser,
    *,
    vendor: str = "OpenAI",
    details: list[dict[str, Any]] | None = None,
) -> tuple[list[ModelChunk], bool]:
    """Chunks from one decoded ``chat.completion.chunk``; second item: finish seen.

    Finish reasons come out as FinishReason values; a ``refusal`` delta is text
    followed by a ``refusal`` finish chunk. ``details``: where to collect the
    chunk's ``reasoning_details`` fragments (see :func:`merge_reasoning_details`).
    """
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
        fragments = delta.get("reasoning_details")
        if details is not None and isinstance(fragments, list):
            details.extend(part for part in fragments if isinstance(part, dict))
        content = delta.get("content")
        if isinstance(content, str) and content:
            chunks.extend(text_chunks(parser, content, response_id))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            chunks.append(ModelChunk(text=refusal, response_id=response_id))
            chunks.append(ModelChunk(finish_reason=FinishReason.REFUSAL, response_id=response_id))
        for tool_delta in delta.get("tool_calls") or []:
            chunks.append(
                ModelChunk(
                    tool_call_delta=_normalize_openai_tool_delta(tool_delta),
                    response_id=response_id,
                )
            )
        finish = map_finish(OPENAI_FINISH, choice.get("finish_reason"))
        if finish is not None:
            finished = True
            chunks.append(ModelChunk(finish_reason=finish.value, response_id=response_id))
    # Groq reports streamed usage under ``x_groq.usage`` in the last chunk.
    usage = _usage(obj.get("usage") or (obj.get("x_groq") or {}).get("usage"))
    if usage is not None:
        chunks.append(ModelChunk(usage=usage, response_id=response_id))
    return chunks, finished


async def stream_openai_chunks(
    lines: AsyncIterator[str],
    *,
    transport_name: str = "OpenAI",
    think_source: str | None = None,
    details_source: str | None = None,
) -> AsyncIterator[ModelChunk]:
    """Normalized chunks from an OpenAI SSE stream; a stream cut before the end is an error.

    A refusal stays the finish reason even when the vendor's last chunk says
    ``stop``. ``think_source``: the streamed reasoning also ends as one
    thinking block tagged with that adapter (see :func:`parse_openai_response`);
    ``details_source``: so do the streamed ``reasoning_details``, merged.
    """
    from avo.providers.streaming import ModelChunk, ThinkingStreamParser

    parser = ThinkingStreamParser()
    finished = done = refused = False
    response_id: str | None = None
    thoughts: list[str] = []
    details: list[dict[str, Any]] | None = [] if details_source else None
    async for _event, data in iter_sse_events(lines):
        if data.strip() == "[DONE]":
            done = True
            break
        obj = decode_json(transport_name, data)
        if not isinstance(obj, dict):
            raise malformed(transport_name, f"stream event is not a JSON object: {data[:80]!r}")
        response_id = response_id or obj.get("id")
        chunks, saw_finish = parse_openai_stream_payload(
            obj, parser, vendor=transport_name, details=details
        )
        finished = finished or saw_finish
        for chunk in chunks:
            if chunk.finish_reason == FinishReason.REFUSAL:
                refused = True
            elif refused and chunk.finish_reason is not None:
                chunk = ModelChunk(finish_reason=FinishReason.REFUSAL, response_id=response_id)
            if chunk.thought and think_source:
                thoughts.append(chunk.thought)
            yield chunk
    for chunk in flush_chunks(parser, response_id):
        if chunk.thought and think_source:
            thoughts.append(chunk.thought)
        yield chunk
    if not (done or finished):
        raise malformed(transport_name, "the stream ended before [DONE] or a finish_reason")
    if thoughts:
        block = {"type": "think", "text": "".join(thoughts), "source": think_source}
        yield ModelChunk(thinking_block=block, response_id=response_id)
    if details:
        merged = merge_reasoning_details(details)
        block = {"type": "reasoning_details", "details": merged, "source": details_source}
        yield ModelChunk(thinking_block=block, response_id=response_id)


class OpenAICompatibleProvider(HTTPProvider):
    """Any server speaking OpenAI Chat Completions: ``POST {base_url}/chat/completions``."""

    name: ClassVar[str] = "openai-compatible"
    vendor: ClassVar[str] = "OpenAI"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    max_tokens_field: ClassVar[str] = "max_completion_tokens"
    supports_output_schema: ClassVar[bool] = True
    json_schema_output: ClassVar[bool] = True
    """False for servers that know ``response_format`` ``json_object`` only."""
    think_round_trip: ClassVar[bool] = False
    """True for vendors that want ``<think>`` reasoning back in the assistant content."""
    reasoning_details_round_trip: ClassVar[bool] = False
    """True for vendors that want a turn's ``reasoning_details`` back on its message."""

    @property
    def _think_source(self) -> str | None:
        return self.name if self.think_round_trip else None

    @property
    def _details_source(self) -> str | None:
        return self.name if self.reasoning_details_round_trip else None

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
            think_source=self._think_source,
            json_schema=self.json_schema_output,
            details_source=self._details_source,
        )

    def parse_response(self, data: Any) -> ModelResponse:
        """A Chat Completions response."""
        return parse_openai_response(
            data,
            vendor=self.vendor,
            think_source=self._think_source,
            details_source=self._details_source,
        )

    def parse_stream(self, lines: AsyncIterator[str]) -> AsyncIterator[ModelChunk]:
        """A Chat Completions SSE stream."""
        return stream_openai_chunks(
            lines,
            transport_name=self.vendor,
            think_source=self._think_source,
            details_source=self._details_source,
        )


__all__ = [
    "OPENAI_FINISH",
    "OpenAICompatibleProvider",
    "build_openai_payload",
    "merge_reasoning_details",
    "openai_messages",
    "parse_openai_response",
    "parse_openai_stream_payload",
    "response_format",
    "stream_openai_chunks",
]
