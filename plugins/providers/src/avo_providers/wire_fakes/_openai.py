"""The OpenAI Chat Completions wire format, as a scripted loopback server answers it."""

from __future__ import annotations

import json
from typing import Any

from avo.models import TokenUsage
from avo.testing.providers import ScriptedResponse
from avo_providers.wire_fakes._common import Call, _pieces


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

    def text(self, text: str, usage: TokenUsage, finish: str = "stop") -> ScriptedResponse:
        """A plain answer (``finish="length"``: cut off at the output limit)."""
        message = {"role": "assistant", "content": text}
        return ScriptedResponse.json(self._completion(message, finish, usage))

    def truncated(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """An answer cut off at the output-token limit."""
        return self.text(text, usage, "length")

    def refusal(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A refusal: ``message.refusal`` set, no content."""
        message = {"role": "assistant", "content": None, "refusal": text}
        return ScriptedResponse.json(self._completion(message, "stop", usage))

    def tool_calls(
        self,
        calls: list[Call],
        usage: TokenUsage,
        reasoning_details: list[dict[str, Any]] | None = None,
    ) -> ScriptedResponse:
        """Several tool calls in one turn (with OpenRouter's ``reasoning_details``, if given)."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for call_id, name, arguments in calls
            ],
        }
        if reasoning_details:
            message["reasoning_details"] = reasoning_details
        return ScriptedResponse.json(self._completion(message, "tool_calls", usage))

    def _details_events(self, details: list[dict[str, Any]]) -> list[tuple[str | None, Any]]:
        """``reasoning_details`` as OpenRouter streams them: text in fragments, the rest last."""
        events: list[tuple[str | None, Any]] = []
        for index, entry in enumerate(details):
            text = entry.get("text")
            rest = {k: v for k, v in entry.items() if k != "text"}
            if isinstance(text, str):
                for piece in _pieces(text):
                    part = {"type": entry["type"], "text": piece, "index": index}
                    events.append((None, self._chunk({"reasoning_details": [part]})))
            last = {**rest, "index": index}
            events.append((None, self._chunk({"reasoning_details": [last]})))
        return events

    def tool_calls_stream(
        self,
        calls: list[Call],
        usage: TokenUsage,
        reasoning_details: list[dict[str, Any]] | None = None,
    ) -> ScriptedResponse:
        """Several streamed tool calls, each announced then its arguments in fragments."""
        events: list[tuple[str | None, Any]] = [
            (None, self._chunk({"role": "assistant", "content": None}))
        ]
        events += self._details_events(reasoning_details or [])
        for index, (call_id, name, arguments) in enumerate(calls):
            first = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            events.append((None, self._chunk({"tool_calls": [first]})))
            for piece in _pieces(json.dumps(arguments)):
                delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                events.append((None, self._chunk(delta)))
        return ScriptedResponse.sse(events + self._tail("tool_calls", usage))

    def truncated_answer_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A streamed answer ending with ``finish_reason: length``."""
        return ScriptedResponse.sse(self.text_events(text) + self._tail("length", usage))

    def refusal_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A streamed refusal (``delta.refusal`` pieces)."""
        events: list[tuple[str | None, Any]] = [
            (None, self._chunk({"role": "assistant", "content": None, "refusal": ""}))
        ]
        events += [(None, self._chunk({"refusal": piece})) for piece in _pieces(text)]
        return ScriptedResponse.sse(events + self._tail("stop", usage))

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


__all__ = ["OpenAIWire"]
