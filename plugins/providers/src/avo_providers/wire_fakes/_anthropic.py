"""The Anthropic Messages wire format, as a scripted loopback server answers it."""

from __future__ import annotations

import json
from typing import Any

from avo.models import TokenUsage
from avo.testing.providers import ScriptedResponse
from avo_providers.wire_fakes._common import Call, _pieces


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

    def text(self, text: str, usage: TokenUsage, stop: str = "end_turn") -> ScriptedResponse:
        """A plain answer (``stop="max_tokens"``: cut off at the output limit)."""
        return ScriptedResponse.json(self._message([{"type": "text", "text": text}], stop, usage))

    def truncated(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """An answer cut off at ``max_tokens``."""
        return self.text(text, usage, "max_tokens")

    def refusal(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A refusal (``stop_reason: refusal``)."""
        return self.text(text, usage, "refusal")

    def tool_calls(
        self,
        calls: list[Call],
        usage: TokenUsage,
        thinking: list[dict[str, Any]] | None = None,
    ) -> ScriptedResponse:
        """Thinking blocks (if any), a text preamble and one ``tool_use`` block per call."""
        content: list[Any] = [*(thinking or []), {"type": "text", "text": "Let me check."}]
        content += [
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
            for call_id, name, arguments in calls
        ]
        return ScriptedResponse.json(self._message(content, "tool_use", usage))

    def tool_calls_stream(
        self,
        calls: list[Call],
        usage: TokenUsage,
        thinking: list[dict[str, Any]] | None = None,
    ) -> ScriptedResponse:
        """Streamed thinking blocks (text and signature deltas), then one block per call."""
        events: list[tuple[str | None, Any]] = [self._start(usage)]
        index = 0
        for block in thinking or []:
            if block.get("type") == "thinking":
                opening = {"type": "thinking", "thinking": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": piece}
                    for piece in _pieces(str(block["thinking"]))
                ]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            else:  # redacted_thinking arrives whole
                opening, deltas = dict(block), []
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": opening},
                )
            )
            events += [
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                for d in deltas
            ]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        for call_id, name, arguments in calls:
            block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block},
                )
            )
            for piece in _pieces(json.dumps(arguments)):
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        return ScriptedResponse.sse([*events, *self._end("tool_use", usage)])

    def truncated_answer_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A streamed answer stopped at ``max_tokens``."""
        stop = ("content_block_stop", {"type": "content_block_stop", "index": 0})
        return ScriptedResponse.sse(
            [*self.text_events(text, usage), stop, *self._end("max_tokens", usage)]
        )

    def refusal_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A streamed answer that ends with ``stop_reason: refusal``."""
        stop = ("content_block_stop", {"type": "content_block_stop", "index": 0})
        return ScriptedResponse.sse(
            [*self.text_events(text, usage), stop, *self._end("refusal", usage)]
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


__all__ = ["AnthropicWire"]
