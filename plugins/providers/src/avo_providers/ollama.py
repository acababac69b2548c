"""Ollama's native chat API (local and Ollama Cloud) and :class:`OllamaProvider`.

``POST {base_url}/api/chat``; the stream is newline-delimited JSON
(``application/x-ndjson``), the last object has ``"done": true``. Tool-call
arguments are JSON objects, not strings.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from avo.models import FinishReason, ModelRequest, ModelResponse, TokenUsage, ToolCall, new_id
from avo_providers.base_http import HTTPProvider
from avo_providers.http_common import (
    decode_json,
    json_safe_content,
    malformed,
    map_finish,
    openai_tools,
    parse_tool_arguments,
    recorded_call_arguments,
    redact_text,
    require_tool_name,
    stream_error,
)
from avo_providers.media import is_blocks, ollama_content
from avo_providers.openai_compatible import flush_chunks, text_chunks

if TYPE_CHECKING:
    from avo.providers.streaming import ModelChunk

OLLAMA_FINISH: dict[str, FinishReason] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
}
"""Ollama ``done_reason`` values (``load``, ``unload`` and the rest: unknown)."""


def _ollama_finish(raw: Any, calls: bool) -> FinishReason | None:
    finish = map_finish(OLLAMA_FINISH, raw)
    if calls and finish in (FinishReason.STOP, None):  # Ollama says stop after tool calls
        return FinishReason.TOOL_CALLS
    return finish


def ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runtime's messages in Ollama's shape (object tool arguments, ``tool_name``)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        item: dict[str, Any] = {"role": role, "content": json_safe_content(content)}
        if is_blocks(content):  # text in content, images as base64 in images
            item["content"], images = ollama_content(content)
            if images:
                item["images"] = images
        if role == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                calls.append(
                    {
                        "function": {
                            "name": function.get("name"),
                            "arguments": recorded_call_arguments(function),
                        }
                    }
                )
            item["tool_calls"] = calls
        if role == "tool" and message.get("name"):
            item["tool_name"] = message["name"]
        out.append(item)
    return out


def build_ollama_payload(
    request: ModelRequest, *, model: str, max_tokens: int, stream: bool
) -> dict[str, Any]:
    """An ``/api/chat`` request body."""
    payload: dict[str, Any] = {
        "model": model,
        "messages": ollama_messages(request.messages),
        "stream": stream,
        "options": {"num_predict": max_tokens},
    }
    if request.tools:
        payload["tools"] = openai_tools(request.tools)
    if request.output_schema is not None:
        payload["format"] = {k: v for k, v in request.output_schema.items() if k != "title"}
    return payload


def _usage(obj: dict[str, Any]) -> TokenUsage | None:
    if "prompt_eval_count" not in obj and "eval_count" not in obj:
        return None
    return TokenUsage(
        input_tokens=int(obj.get("prompt_eval_count") or 0),
        output_tokens=int(obj.get("eval_count") or 0),
    )


def parse_ollama_response(data: Any, *, vendor: str = "Ollama") -> ModelResponse:
    """An ``/api/chat`` response as a ModelResponse (the first tool call wins)."""
    from avo.providers.streaming import split_thinking

    if not isinstance(data, dict):
        raise malformed(vendor, f"expected a JSON object, got {type(data).__name__}")
    if "error" in data:
        raise malformed(vendor, redact_text(f"error in a 200 response: {data['error']!r}"))
    message = data.get("message")
    if not isinstance(message, dict):
        raise malformed(vendor, "no 'message' in the response")
    usage = _usage(data)
    response_id = new_id()
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        name = require_tool_name(vendor, function.get("name"))
        arguments = parse_tool_arguments(vendor, function.get("arguments"), name)
        if raw.get("id"):
            calls.append(ToolCall(tool_call_id=str(raw["id"]), name=name, arguments=arguments))
        else:
            calls.append(ToolCall(name=name, arguments=arguments))
    finish = _ollama_finish(data.get("done_reason"), bool(calls))
    if calls:
        return ModelResponse(
            response_id=response_id, tool_calls=calls, usage=usage, finish_reason=finish
        )
    _, answer = split_thinking(str(message.get("content") or ""))
    return ModelResponse(response_id=response_id, content=answer, usage=usage, finish_reason=finish)


async def stream_ollama_chunks(
    lines: AsyncIterator[str], *, transport_name: str = "Ollama"
) -> AsyncIterator[ModelChunk]:
    """Normalized chunks from an NDJSON ``/api/chat`` stream; no ``done`` object means cut off."""
    from avo.providers.streaming import ModelChunk, ThinkingStreamParser

    parser = ThinkingStreamParser()
    response_id = new_id()
    calls = 0
    done = False
    async for line in lines:
        if not line.strip():
            continue
        obj = decode_json(transport_name, line)
        if not isinstance(obj, dict):
            raise malformed(transport_name, f"stream line is not a JSON object: {line[:80]!r}")
        if "error" in obj:
            raise stream_error(transport_name, obj["error"])
        message = obj.get("message") or {}
        if message.get("thinking"):
            yield ModelChunk(thought=str(message["thinking"]), response_id=response_id)
        if message.get("content"):
            for chunk in text_chunks(parser, str(message["content"]), response_id):
                yield chunk
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments = function.get("arguments")
            delta: dict[str, Any] = {
                "index": calls,
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            }
            if call.get("id"):
                delta["id"] = str(call["id"])
            if function.get("name"):
                delta["name"] = function["name"]
            calls += 1
            yield ModelChunk(tool_call_delta=delta, response_id=response_id)
        if obj.get("done"):
            done = True
            usage = _usage(obj)
            if usage is not None:
                yield ModelChunk(usage=usage, response_id=response_id)
            finish = _ollama_finish(obj.get("done_reason") or "stop", calls > 0)
            reason = (finish or FinishReason.UNKNOWN).value
            yield ModelChunk(finish_reason=reason, response_id=response_id)
            break
    for chunk in flush_chunks(parser, response_id):
        yield chunk
    if not done:
        raise malformed(transport_name, "the stream ended before the final 'done' object")


class OllamaProvider(HTTPProvider):
    """A local (or self-hosted) Ollama server; the API key is optional."""

    name: ClassVar[str] = "ollama"
    vendor: ClassVar[str] = "Ollama"
    default_base_url: ClassVar[str] = "http://localhost:11434"
    api_style: ClassVar[str] = "ollama"
    supports_output_schema: ClassVar[bool] = True
    stream_content_types: ClassVar[tuple[str, ...]] = ("application/x-ndjson", "json")

    def headers(self) -> dict[str, str]:
        """Bearer auth only when a key is configured."""
        if self.config.api_key:
            return {"authorization": f"Bearer {self.config.api_key}"}
        return {}

    def endpoint(self, *, stream: bool) -> str:
        """``/api/chat``."""
        return f"{self.base_url}/api/chat"

    def build_payload(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """An ``/api/chat`` body."""
        return build_ollama_payload(
            request, model=self.model, max_tokens=self.max_completion_tokens, stream=stream
        )

    def parse_response(self, data: Any) -> ModelResponse:
        """An ``/api/chat`` response."""
        return parse_ollama_response(data, vendor=self.vendor)

    def parse_stream(self, lines: AsyncIterator[str]) -> AsyncIterator[ModelChunk]:
        """An NDJSON stream."""
        return stream_ollama_chunks(lines, transport_name=self.vendor)


class OllamaCloudProvider(OllamaProvider):
    """Ollama Cloud (``https://ollama.com``): the same API, remote models, a required key."""

    name: ClassVar[str] = "ollama-cloud"
    vendor: ClassVar[str] = "Ollama Cloud"
    default_base_url: ClassVar[str] = "https://ollama.com"


def list_local_models(settings: Any, *, environ: Any) -> list[Any]:
    """What the Ollama server has pulled: ``GET /api/tags``, then ``POST /api/show``
    per model for its context length and capabilities (vision, tools, thinking).

    Local models are free; what the server does not say stays unknown. A server
    that cannot be reached is a ProviderError naming the URL.
    """
    import httpx

    from avo.exceptions import ProviderError
    from avo.plugins import ModelInfo
    from avo.pricing import FREE

    base = str(
        (settings or {}).get("base_url")
        or (environ or {}).get("AVO_OLLAMA_BASE_URL")
        or OllamaProvider.default_base_url
    ).rstrip("/")
    try:
        with httpx.Client(timeout=5.0) as client:
            tags = client.get(f"{base}/api/tags")
            tags.raise_for_status()
            models: list[Any] = []
            for entry in tags.json().get("models") or []:
                name = str(entry.get("name") or entry.get("model") or "")
                if not name:
                    continue
                show: dict[str, Any] = {}
                try:
                    shown = client.post(f"{base}/api/show", json={"model": name})
                    if shown.status_code == 200:
                        show = shown.json()
                except httpx.HTTPError:
                    show = {}
                caps = show.get("capabilities")
                caps = set(caps) if isinstance(caps, list) else None
                window = next(
                    (
                        int(value)
                        for key, value in (show.get("model_info") or {}).items()
                        if key.endswith(".context_length") and isinstance(value, int)
                    ),
                    None,
                )
                models.append(
                    ModelInfo(
                        name=name,
                        context_window=window,
                        tools=None if caps is None else "tools" in caps,
                        vision=None if caps is None else "vision" in caps,
                        documents=(),
                        thinking=None if caps is None else "thinking" in caps,
                        prices=FREE,
                        local=True,
                        source="server",
                    )
                )
    except (httpx.HTTPError, ValueError) as exc:
        raise ProviderError(
            f"cannot list Ollama models at {base}: {type(exc).__name__}: {exc}; start Ollama "
            "(ollama serve) or set AVO_OLLAMA_BASE_URL",
            retryable=False,
        ) from None
    return models


__all__ = [
    "OLLAMA_FINISH",
    "list_local_models",
    "OllamaCloudProvider",
    "OllamaProvider",
    "build_ollama_payload",
    "ollama_messages",
    "parse_ollama_response",
    "stream_ollama_chunks",
]
