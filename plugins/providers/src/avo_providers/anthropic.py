"""The Anthropic Messages wire format and :class:`AnthropicProvider`.

``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version:
2023-06-01``. Tool calls are ``tool_use`` blocks, results ``tool_result`` blocks
in a user turn. With ``ModelRequest.cache`` the request carries prompt-caching
``cache_control`` breakpoints.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from avo.exceptions import ProviderError
from avo.models import FinishReason, ModelRequest, ModelResponse, TokenUsage, ToolCall, new_id
from avo_providers.base_http import HTTPProvider
from avo_providers.http_common import (
    anthropic_tools,
    decode_json,
    iter_sse_events,
    json_safe_content,
    malformed,
    map_finish,
    own_thinking,
    parse_json_content,
    parse_tool_arguments,
    recorded_call_arguments,
    redact_text,
    require_tool_name,
    vendor_call_id,
    vendor_result_id,
)
from avo_providers.media import anthropic_blocks, is_blocks
from avo_providers.openai_compatible import flush_chunks, text_chunks

if TYPE_CHECKING:
    from avo.providers.streaming import ModelChunk

ANTHROPIC_VERSION = "2023-06-01"
_EPHEMERAL = {"type": "ephemeral"}
_RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "rate_limit_error", "api_error"})
_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})

ANTHROPIC_FINISH: dict[str, FinishReason] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.REFUSAL,
}
"""Messages API ``stop_reason`` values (``pause_turn`` and anything newer: unknown)."""


def _tool_result_block(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": vendor_result_id(message),
        # images and documents a tool returned go inside its result
        "content": anthropic_blocks(content) if is_blocks(content) else json_safe_content(content),
    }
    decoded = parse_json_content(content)
    # The runtime records a failed tool call as ``{"error": "..."}``.
    if isinstance(decoded, dict) and set(decoded) == {"error"}:
        block["is_error"] = True
    return block


def anthropic_messages(
    messages: list[dict[str, Any]], *, source: str = "anthropic"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system blocks, messages)`` in Anthropic's shape; same-role turns are merged.

    An assistant turn starts with the thinking blocks ``source`` (this adapter)
    made for it, signatures intact: extended thinking with tool use requires
    them back. Tool calls and results carry the vendor's own ids.
    """
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        blocks: list[dict[str, Any]] = []
        if role == "system":
            text = json_safe_content(message.get("content"))
            if text:
                system.append({"type": "text", "text": text})
            continue
        if role == "tool":
            role, blocks = "user", [_tool_result_block(message)]
        else:
            if role == "assistant":
                blocks.extend(own_thinking(message, source))
            content = message.get("content")
            if is_blocks(content):
                blocks.extend(anthropic_blocks(content))
            else:
                text = json_safe_content(content)
                if text:
                    blocks.append({"type": "text", "text": text})
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": vendor_call_id(call),
                        "name": function.get("name"),
                        "input": recorded_call_arguments(function),
                    }
                )
            role = "assistant" if role == "assistant" else "user"
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return system, out


def _mark(blocks: list[dict[str, Any]]) -> None:
    if blocks:
        blocks[-1]["cache_control"] = dict(_EPHEMERAL)


def apply_prompt_cache(payload: dict[str, Any], request: ModelRequest) -> None:
    """Add ``cache_control`` breakpoints: tools, system, the stable prefix, the tail.

    Anthropic allows four breakpoints; these are the four that pay off in an
    agent loop, where every step resends the whole conversation. Message
    breakpoints come from the kernel's :mod:`avo.prompt_cache`.
    """
    from avo.prompt_cache import annotate_anthropic_messages, compute_breakpoints

    if payload.get("tools"):
        _mark(payload["tools"])
    if payload.get("system"):
        _mark(payload["system"])
    prefix: int | None = None
    if request.cache_prefix_messages is not None:
        # The runtime counts its own messages; system turns moved out of ``messages``.
        head = request.messages[: request.cache_prefix_messages]
        prefix = sum(1 for message in head if message.get("role") != "system")
    breakpoints = compute_breakpoints(payload["messages"], prefix_override=prefix, tail=1)
    payload["messages"] = annotate_anthropic_messages(payload["messages"], breakpoints)


def build_anthropic_payload(
    request: ModelRequest,
    *,
    model: str,
    max_tokens: int,
    stream: bool,
    source: str = "anthropic",
) -> dict[str, Any]:
    """A Messages API request body (``source``: whose thinking blocks go back)."""
    system, messages = anthropic_messages(request.messages, source=source)
    payload: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
    if system:
        payload["system"] = system
    if request.tools:
        payload["tools"] = anthropic_tools(request.tools)
    if stream:
        payload["stream"] = True
    if request.cache:
        apply_prompt_cache(payload, request)
    return payload


def _usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    # input_tokens excludes the tokens read from or written to the prompt cache;
    # TokenUsage counts every input token and says how many were which.
    read = int(raw.get("cache_read_input_tokens") or 0)
    written = int(raw.get("cache_creation_input_tokens") or 0)
    return TokenUsage(
        input_tokens=int(raw.get("input_tokens") or 0) + read + written,
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def parse_anthropic_response(
    data: Any, *, vendor: str = "Anthropic", source: str = "anthropic"
) -> ModelResponse:
    """A Messages API response as a ModelResponse (every ``tool_use``, in order).

    Thinking blocks are kept, tagged with ``source``, to go back on later turns.
    """
    from avo.providers.streaming import split_thinking

    if not isinstance(data, dict):
        raise malformed(vendor, f"expected a JSON object, got {type(data).__name__}")
    if data.get("type") == "error":
        raise malformed(
            vendor, redact_text(f"error object in a 200 response: {data.get('error')!r}")
        )
    content = data.get("content")
    if not isinstance(content, list):
        raise malformed(vendor, "no 'content' list in the response")
    usage = _usage(data.get("usage"))
    response_id = str(data.get("id") or new_id())
    finish = map_finish(ANTHROPIC_FINISH, data.get("stop_reason"))
    thinking = [
        {**block, "source": source} for block in content if block.get("type") in _THINKING_TYPES
    ]
    last = content[-1] if content and isinstance(content[-1], dict) else {}
    if finish is FinishReason.LENGTH and last.get("type") == "tool_use":
        # the limit struck inside the call: its input is whatever was complete
        raise malformed(
            vendor,
            f"tool call {last.get('name')!r} was cut off at the output-token limit "
            f"(stop_reason={data.get('stop_reason')}) before its arguments were complete; "
            "raise the provider's output-token limit",
        )
    calls = []
    for block in content:
        if block.get("type") == "tool_use":
            name = require_tool_name(vendor, block.get("name"))
            arguments = parse_tool_arguments(vendor, block.get("input"), name)
            if block.get("id"):
                calls.append(
                    ToolCall(tool_call_id=str(block["id"]), name=name, arguments=arguments)
                )
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
    text = "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    _, answer = split_thinking(text)
    return ModelResponse(
        response_id=response_id,
        content=answer,
        usage=usage,
        finish_reason=finish,
        thinking=thinking,
    )


def parse_anthropic_stream_event(
    event: str,
    obj: dict[str, Any],
    state: dict[str, Any],
    *,
    vendor: str = "Anthropic",
    source: str = "anthropic",
) -> list[ModelChunk]:
    """Chunks from one decoded Messages stream event; ``state`` carries the parser across.

    A thinking block streams as ``thought`` text; when it stops, the whole block
    (with its signature, tagged ``source``) follows as a ``thinking_block``.
    """
    from avo.providers.streaming import ModelChunk

    kind = obj.get("type", event)
    response_id = state.get("response_id")
    parser = state["parser"]
    open_blocks: dict[int, dict[str, Any]] = state.setdefault("thinking", {})
    if kind == "error":
        error = obj.get("error") or {}
        error_type = str(error.get("type", "error"))
        raise ProviderError(
            f"{vendor} stream error: {error_type}: {error.get('message', '')}",
            retryable=error_type in _RETRYABLE_STREAM_ERRORS,
        )
    if kind == "message_start":
        message = obj.get("message") or {}
        state["response_id"] = response_id = message.get("id")
        usage = _usage(message.get("usage"))
        return [ModelChunk(usage=usage, response_id=response_id)] if usage else []
    if kind == "content_block_start":
        block = obj.get("content_block") or {}
        index = int(obj.get("index") or 0)
        if block.get("type") == "tool_use":
            # Anthropic streams the input as input_json_delta fragments after an empty
            # ``input``; some compatible servers send it whole here instead.
            whole = block.get("input")
            delta: dict[str, Any] = {"index": index, "arguments": whole if whole else ""}
            if block.get("id"):
                delta["id"] = block["id"]
            if block.get("name"):
                delta["name"] = block["name"]
            return [ModelChunk(tool_call_delta=delta, response_id=response_id)]
        if block.get("type") in _THINKING_TYPES:
            open_blocks[index] = dict(block)
            if block.get("thinking"):
                return [ModelChunk(thought=str(block["thinking"]), response_id=response_id)]
            return []
        if block.get("type") == "text" and block.get("text"):
            return text_chunks(parser, block["text"], response_id)
        return []
    if kind == "content_block_stop":
        finished = open_blocks.pop(int(obj.get("index") or 0), None)
        if finished is None:
            return []
        finished["source"] = source
        return [ModelChunk(thinking_block=finished, response_id=response_id)]
    if kind == "content_block_delta":
        delta = obj.get("delta") or {}
        index = int(obj.get("index") or 0)
        if delta.get("type") == "text_delta":
            return text_chunks(parser, str(delta.get("text", "")), response_id)
        if delta.get("type") == "input_json_delta":
            fragment = str(delta.get("partial_json", ""))
            return [
                ModelChunk(
                    tool_call_delta={"index": index, "arguments": fragment},
                    response_id=response_id,
                )
            ]
        if delta.get("type") == "thinking_delta" and delta.get("thinking"):
            if index in open_blocks:
                block = open_blocks[index]
                block["thinking"] = str(block.get("thinking") or "") + str(delta["thinking"])
            return [ModelChunk(thought=str(delta["thinking"]), response_id=response_id)]
        if delta.get("type") == "signature_delta" and index in open_blocks:
            block = open_blocks[index]
            block["signature"] = str(block.get("signature") or "") + str(delta.get("signature", ""))
        return []
    if kind == "message_delta":
        chunks = []
        finish = map_finish(ANTHROPIC_FINISH, (obj.get("delta") or {}).get("stop_reason"))
        if finish is not None:
            chunks.append(ModelChunk(finish_reason=finish.value, response_id=response_id))
        usage = _usage(obj.get("usage"))
        if usage:
            chunks.append(ModelChunk(usage=usage, response_id=response_id))
        return chunks
    if kind == "message_stop":
        state["done"] = True
    return []


async def stream_anthropic_chunks(
    lines: AsyncIterator[str], *, transport_name: str = "Anthropic", source: str = "anthropic"
) -> AsyncIterator[ModelChunk]:
    """Normalized chunks from a Messages SSE stream; a stream without ``message_stop`` fails."""
    from avo.providers.streaming import ThinkingStreamParser

    state: dict[str, Any] = {"parser": ThinkingStreamParser(), "done": False}
    async for event, data in iter_sse_events(lines):
        obj = decode_json(transport_name, data)
        if not isinstance(obj, dict):
            raise malformed(transport_name, f"stream event is not a JSON object: {data[:80]!r}")
        chunks = parse_anthropic_stream_event(
            event, obj, state, vendor=transport_name, source=source
        )
        for chunk in chunks:
            yield chunk
        if state["done"]:
            break
    for chunk in flush_chunks(state["parser"], state.get("response_id")):
        yield chunk
    if not state["done"]:
        raise malformed(transport_name, "the stream ended before message_stop")


class AnthropicProvider(HTTPProvider):
    """Anthropic's Messages API."""

    name: ClassVar[str] = "anthropic"
    vendor: ClassVar[str] = "Anthropic"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    api_style: ClassVar[str] = "anthropic"
    messages_path: ClassVar[str] = "/v1/messages"

    def headers(self) -> dict[str, str]:
        """``x-api-key`` and the API version."""
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self.config.api_key:
            headers["x-api-key"] = self.config.api_key
        return headers

    def endpoint(self, *, stream: bool) -> str:
        """The Messages endpoint."""
        return f"{self.base_url}{self.messages_path}"

    def build_payload(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """A Messages body."""
        return build_anthropic_payload(
            request,
            model=self.model,
            max_tokens=self.max_completion_tokens,
            stream=stream,
            source=self.name,
        )

    def parse_response(self, data: Any) -> ModelResponse:
        """A Messages response."""
        return parse_anthropic_response(data, vendor=self.vendor, source=self.name)

    def parse_stream(self, lines: AsyncIterator[str]) -> AsyncIterator[ModelChunk]:
        """A Messages SSE stream."""
        return stream_anthropic_chunks(lines, transport_name=self.vendor, source=self.name)


__all__ = [
    "ANTHROPIC_FINISH",
    "ANTHROPIC_VERSION",
    "AnthropicProvider",
    "anthropic_messages",
    "apply_prompt_cache",
    "build_anthropic_payload",
    "parse_anthropic_response",
    "parse_anthropic_stream_event",
    "stream_anthropic_chunks",
]
