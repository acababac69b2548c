"""Vendor-shaped answers for :class:`avo.testing.providers.ScriptedHTTPServer`.

Each ``*Wire`` class builds the documented response bodies and stream events of
one wire format (OpenAI Chat Completions, Anthropic Messages, Gemini
``generateContent``, Ollama ``/api/chat``), including errors with rate-limit
headers, so tests of this package (and of anything built on it) can run a
provider against a real loopback server. Test-only: imports pytest through
:mod:`avo.testing.providers`.
"""

from __future__ import annotations

import json
from typing import Any

from avo.models import TokenUsage
from avo.testing.providers import ScriptedResponse


def _pieces(text: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class OpenAIWire:
    """OpenAI Chat Completions (also Groq, Cerebras, OpenRouter, MiniMax openai style)."""

    model = "test-model"

    def _usage(self, usage: TokenUsage) -> dict[str, int]:
        return {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        }

    def _completion(self, message: dict[str, Any], finish: str, usage: TokenUsage) -> Any:
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": self._usage(usage),
        }

    def text(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A plain answer."""
        message = {"role": "assistant", "content": text}
        return ScriptedResponse.json(self._completion(message, "stop", usage))

    def tool_call(
        self, call_id: str, name: str | None, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """One tool call (``name=None`` leaves the name out)."""
        function: dict[str, Any] = {"arguments": json.dumps(arguments)}
        if name is not None:
            function["name"] = name
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        }
        return ScriptedResponse.json(self._completion(message, "tool_calls", usage))

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def _tail(self, finish: str, usage: TokenUsage) -> list[tuple[str | None, Any]]:
        usage_chunk = self._chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = self._usage(usage)
        return [(None, self._chunk({}, finish)), (None, usage_chunk), (None, "[DONE]")]

    def text_events(self, text: str) -> list[tuple[str | None, Any]]:
        """The stream events of an answer, without the finish/usage/[DONE] tail."""
        events: list[tuple[str | None, Any]] = [
            (None, self._chunk({"role": "assistant", "content": ""}))
        ]
        events += [(None, self._chunk({"content": piece})) for piece in _pieces(text)]
        return events

    def text_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A streamed answer ending with finish_reason, a usage chunk and ``[DONE]``."""
        return ScriptedResponse.sse(self.text_events(text) + self._tail("stop", usage))

    def tool_call_stream(
        self, call_id: str, name: str, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """A streamed tool call whose arguments arrive in fragments."""
        first = {"index": 0, "id": call_id, "type": "function"}
        first["function"] = {"name": name, "arguments": ""}
        events: list[tuple[str | None, Any]] = [
            (None, self._chunk({"role": "assistant", "content": None, "tool_calls": [first]}))
        ]
        for piece in _pieces(json.dumps(arguments)):
            delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
            events.append((None, self._chunk(delta)))
        return ScriptedResponse.sse(events + self._tail("tool_calls", usage))

    def truncated_stream(self) -> ScriptedResponse:
        """A stream cut mid-answer (no finish_reason, no ``[DONE]``)."""
        return ScriptedResponse.sse(self.text_events("Sunny and")[:2])

    def error(self, status: int, message: str) -> ScriptedResponse:
        """An OpenAI error body; 429 carries ``retry-after`` and rate-limit headers."""
        kind = "rate_limit_exceeded" if status == 429 else "invalid_request_error"
        headers = {}
        if status == 429:
            headers = {"retry-after": "2", "x-ratelimit-remaining-requests": "0"}
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        return ScriptedResponse.json(body, status=status, headers=headers)


class AnthropicWire:
    """Anthropic Messages (also MiniMax anthropic style)."""

    model = "claude-test"

    def _message(self, content: list[Any], stop: str, usage: TokenUsage) -> dict[str, Any]:
        return {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        }

    def text(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A plain answer."""
        return ScriptedResponse.json(
            self._message([{"type": "text", "text": text}], "end_turn", usage)
        )

    def tool_call(
        self, call_id: str, name: str | None, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """A text preamble and one ``tool_use`` block (``name=None`` leaves the name out)."""
        block: dict[str, Any] = {"type": "tool_use", "id": call_id, "input": arguments}
        if name is not None:
            block["name"] = name
        content = [{"type": "text", "text": "Let me check."}, block]
        return ScriptedResponse.json(self._message(content, "tool_use", usage))

    def _start(self, usage: TokenUsage) -> tuple[str, Any]:
        message = self._message([], "", TokenUsage(input_tokens=usage.input_tokens))
        message["stop_reason"] = None
        message["usage"]["output_tokens"] = 1
        return "message_start", {"type": "message_start", "message": message}

    def _end(self, stop: str, usage: TokenUsage) -> list[tuple[str | None, Any]]:
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        }
        return [("message_delta", delta), ("message_stop", {"type": "message_stop"})]

    def text_events(self, text: str, usage: TokenUsage) -> list[tuple[str | None, Any]]:
        """``message_start`` through the last text delta."""
        events: list[tuple[str | None, Any]] = [
            self._start(usage),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            ("ping", {"type": "ping"}),
        ]
        for piece in _pieces(text):
            delta = {"type": "text_delta", "text": piece}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
            )
        return events

    def text_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A complete streamed answer."""
        stop = ("content_block_stop", {"type": "content_block_stop", "index": 0})
        return ScriptedResponse.sse(
            [*self.text_events(text, usage), stop, *self._end("end_turn", usage)]
        )

    def tool_call_stream(
        self, call_id: str, name: str, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """A streamed text block then a ``tool_use`` block with ``input_json_delta`` pieces."""
        events = [
            *self.text_events("Let me check.", usage),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            ),
        ]
        for piece in _pieces(json.dumps(arguments)):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
        return ScriptedResponse.sse([*events, *self._end("tool_use", usage)])

    def truncated_stream(self) -> ScriptedResponse:
        """Cut after the first text delta (no ``message_stop``)."""
        return ScriptedResponse.sse(self.text_events("Sunny and", TokenUsage(input_tokens=3))[:4])

    def error(self, status: int, message: str) -> ScriptedResponse:
        """An Anthropic error body; 429 carries ``retry-after`` and rate-limit headers."""
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        headers = {}
        if status == 429:
            headers = {"retry-after": "3", "anthropic-ratelimit-requests-remaining": "0"}
        body = {
            "type": "error",
            "error": {"type": kinds.get(status, "api_error"), "message": message},
        }
        return ScriptedResponse.json(body, status=status, headers=headers)


class GeminiWire:
    """Gemini ``generateContent`` / ``streamGenerateContent?alt=sse``."""

    model = "gemini-test"

    def _response(
        self, parts: list[Any], finish: str | None, usage: TokenUsage | None
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        body: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": self.model,
            "responseId": "resp-1",
        }
        if usage is not None:
            body["usageMetadata"] = {
                "promptTokenCount": usage.input_tokens,
                "candidatesTokenCount": usage.output_tokens,
                "totalTokenCount": usage.total_tokens,
            }
        return body

    def text(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A plain answer."""
        return ScriptedResponse.json(self._response([{"text": text}], "STOP", usage))

    def tool_call(
        self, call_id: str, name: str | None, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """One ``functionCall`` part (Gemini sends no call id)."""
        call: dict[str, Any] = {"args": arguments}
        if name is not None:
            call["name"] = name
        return ScriptedResponse.json(self._response([{"functionCall": call}], "STOP", usage))

    def text_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """Answer pieces; the last chunk has ``finishReason`` and the usage."""
        pieces = _pieces(text)
        events: list[tuple[str | None, Any]] = [
            (None, self._response([{"text": piece}], None, None)) for piece in pieces[:-1]
        ]
        events.append((None, self._response([{"text": pieces[-1]}], "STOP", usage)))
        return ScriptedResponse.sse(events)

    def tool_call_stream(
        self, call_id: str, name: str, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """Gemini streams a function call whole, in one chunk."""
        part = {"functionCall": {"name": name, "args": arguments}}
        return ScriptedResponse.sse([(None, self._response([part], "STOP", usage))])

    def truncated_stream(self) -> ScriptedResponse:
        """Chunks without any ``finishReason``."""
        return ScriptedResponse.sse([(None, self._response([{"text": "Sunny"}], None, None))])

    def error(self, status: int, message: str) -> ScriptedResponse:
        """A Google API error body."""
        statuses = {
            400: "INVALID_ARGUMENT",
            401: "UNAUTHENTICATED",
            403: "PERMISSION_DENIED",
            404: "NOT_FOUND",
            429: "RESOURCE_EXHAUSTED",
            500: "INTERNAL",
            503: "UNAVAILABLE",
        }
        headers = {"retry-after": "1"} if status == 429 else {}
        body = {
            "error": {"code": status, "message": message, "status": statuses.get(status, "UNKNOWN")}
        }
        return ScriptedResponse.json(body, status=status, headers=headers)


class OllamaWire:
    """Ollama ``/api/chat`` (NDJSON when streaming)."""

    model = "llama-test"

    def _final(self, message: dict[str, Any], usage: TokenUsage, reason: str = "stop") -> Any:
        return {
            "model": self.model,
            "created_at": "2026-01-01T00:00:00Z",
            "message": message,
            "done": True,
            "done_reason": reason,
            "total_duration": 1000,
            "prompt_eval_count": usage.input_tokens,
            "eval_count": usage.output_tokens,
        }

    def _partial(self, message: dict[str, Any]) -> Any:
        return {
            "model": self.model,
            "created_at": "2026-01-01T00:00:00Z",
            "message": message,
            "done": False,
        }

    def text(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A plain answer."""
        body = self._final({"role": "assistant", "content": text}, usage)
        return ScriptedResponse.json(body)

    def tool_call(
        self, call_id: str, name: str | None, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """One tool call with object arguments (``name=None`` leaves the name out)."""
        function: dict[str, Any] = {"arguments": arguments}
        if name is not None:
            function["name"] = name
        message = {"role": "assistant", "content": "", "tool_calls": [{"function": function}]}
        return ScriptedResponse.json(self._final(message, usage))

    def text_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """NDJSON pieces then the final ``done`` object with the counts."""
        lines = [self._partial({"role": "assistant", "content": p}) for p in _pieces(text)]
        lines.append(self._final({"role": "assistant", "content": ""}, usage))
        return ScriptedResponse.ndjson(lines)

    def tool_call_stream(
        self, call_id: str, name: str, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """The tool call arrives whole in one line, then ``done``."""
        call = {"function": {"name": name, "arguments": arguments}}
        lines = [
            self._partial({"role": "assistant", "content": "", "tool_calls": [call]}),
            self._final({"role": "assistant", "content": ""}, usage),
        ]
        return ScriptedResponse.ndjson(lines)

    def truncated_stream(self) -> ScriptedResponse:
        """Lines without the final ``done: true`` object."""
        return ScriptedResponse.ndjson([self._partial({"role": "assistant", "content": "Sunny"})])

    def error(self, status: int, message: str) -> ScriptedResponse:
        """Ollama's ``{"error": "..."}`` body."""
        return ScriptedResponse.json({"error": message}, status=status)


__all__ = ["AnthropicWire", "GeminiWire", "OllamaWire", "OpenAIWire"]
