"""The OpenAI Responses API wire format, as a scripted loopback server answers it."""

from __future__ import annotations

import json
from typing import Any

from avo.models import TokenUsage
from avo.testing.providers import ScriptedResponse
from avo_providers.wire_fakes._common import Call, _pieces

Event = tuple[str | None, Any]


class ResponsesWire:
    """OpenAI ``POST /v1/responses``: response objects and ``response.*`` stream events.

    ``reasoning`` items (as the vendor returns them with
    ``include: ["reasoning.encrypted_content"]``) may precede an answer or calls.
    """

    model = "test-model"
    response_id = "resp_123"

    def usage(self, usage: TokenUsage) -> dict[str, Any]:
        """``usage`` with the cached-input and reasoning breakdowns."""
        return {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }

    def response(
        self,
        output: list[dict[str, Any]],
        usage: TokenUsage,
        *,
        status: str = "completed",
        incomplete: str | None = None,
    ) -> dict[str, Any]:
        """A ``response`` object holding ``output`` items."""
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": 1_700_000_000,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "store": False,
            "usage": self.usage(usage),
        }

    # ------------------------------------------------------------- items
    @staticmethod
    def message_item(text: str, *, refusal: bool = False) -> dict[str, Any]:
        """An assistant ``message`` output item (``refusal``: a refusal part instead)."""
        part: dict[str, Any] = (
            {"type": "refusal", "refusal": text}
            if refusal
            else {"type": "output_text", "text": text, "annotations": []}
        )
        return {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }

    @staticmethod
    def call_item(index: int, call: Call, name: str | None = None) -> dict[str, Any]:
        """A ``function_call`` output item (``name`` None with a nameless call)."""
        call_id, call_name, arguments = call
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{index}",
            "call_id": call_id,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }
        if call_name is not None:
            item["name"] = call_name
        return item

    # ------------------------------------------------------------- whole answers
    def text(
        self, text: str, usage: TokenUsage, reasoning: list[dict[str, Any]] | None = None
    ) -> ScriptedResponse:
        """An answer (after ``reasoning`` items, if given)."""
        output = [*(reasoning or []), self.message_item(text)]
        return ScriptedResponse.json(self.response(output, usage))

    def truncated(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """An answer cut off at ``max_output_tokens`` (status ``incomplete``)."""
        body = self.response(
            [self.message_item(text)], usage, status="incomplete", incomplete="max_output_tokens"
        )
        return ScriptedResponse.json(body)

    def refusal(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A refusal part instead of text."""
        return ScriptedResponse.json(self.response([self.message_item(text, refusal=True)], usage))

    def tool_calls(
        self, calls: list[Call], usage: TokenUsage, reasoning: list[dict[str, Any]] | None = None
    ) -> ScriptedResponse:
        """Several function calls in one turn (after ``reasoning`` items, if given)."""
        output = [*(reasoning or [])]
        output += [self.call_item(i, call) for i, call in enumerate(calls)]
        return ScriptedResponse.json(self.response(output, usage))

    def tool_call(
        self, call_id: str, name: str | None, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """One function call (``name=None`` leaves the name out)."""
        item = self.call_item(0, (call_id, name or "", arguments))
        if name is None:
            del item["name"]
        return ScriptedResponse.json(self.response([item], usage))

    def failed(self, code: str, message: str) -> ScriptedResponse:
        """A 200 response whose ``status`` is ``failed``."""
        body = self.response([], TokenUsage(), status="failed")
        body["error"] = {"code": code, "message": message}
        return ScriptedResponse.json(body)

    def error(self, status: int, message: str, code: str | None = None) -> ScriptedResponse:
        """An HTTP error body; 429 carries ``retry-after`` and rate-limit headers."""
        kind = "rate_limit_exceeded" if status == 429 else "invalid_request_error"
        headers = {}
        if status == 429:
            headers = {"retry-after": "2", "x-ratelimit-remaining-requests": "0"}
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        return ScriptedResponse.json(body, status=status, headers=headers)

    # ------------------------------------------------------------- streams
    def _event(self, kind: str, **fields: Any) -> Event:
        return kind, {"type": kind, **fields}

    def _head(self) -> list[Event]:
        started = self.response([], TokenUsage(), status="in_progress")
        started.pop("usage")
        return [
            self._event("response.created", response=started),
            self._event("response.in_progress", response=started),
        ]

    def _tail(self, body: dict[str, Any]) -> list[Event]:
        kind = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
        return [self._event(kind, response=body)]

    def _reasoning_events(self, reasoning: list[dict[str, Any]]) -> list[Event]:
        events = []
        for index, item in enumerate(reasoning):
            empty = {"type": "reasoning", "id": item.get("id"), "summary": []}
            events.append(self._event("response.output_item.added", output_index=index, item=empty))
            for part in item.get("summary") or []:
                for piece in _pieces(str(part.get("text") or "")):
                    events.append(
                        self._event(
                            "response.reasoning_summary_text.delta",
                            item_id=item.get("id"),
                            output_index=index,
                            summary_index=0,
                            delta=piece,
                        )
                    )
            events.append(self._event("response.output_item.done", output_index=index, item=item))
        return events

    def _text_events(self, text: str, index: int, kind: str = "output_text") -> list[Event]:
        refusal = kind == "refusal"
        item = self.message_item(text, refusal=refusal)
        opened = {**item, "status": "in_progress", "content": []}
        events = [self._event("response.output_item.added", output_index=index, item=opened)]
        for piece in _pieces(text):
            events.append(
                self._event(
                    f"response.{kind}.delta",
                    item_id="msg_1",
                    output_index=index,
                    content_index=0,
                    delta=piece,
                )
            )
        events.append(self._event("response.output_item.done", output_index=index, item=item))
        return events

    def text_stream(
        self, text: str, usage: TokenUsage, reasoning: list[dict[str, Any]] | None = None
    ) -> ScriptedResponse:
        """A streamed answer ending with ``response.completed`` (usage inside)."""
        reasoning = reasoning or []
        body = self.response([*reasoning, self.message_item(text)], usage)
        events = self._head() + self._reasoning_events(reasoning)
        events += self._text_events(text, len(reasoning)) + self._tail(body)
        return ScriptedResponse.sse(events)

    def refusal_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A streamed refusal."""
        body = self.response([self.message_item(text, refusal=True)], usage)
        events = self._head() + self._text_events(text, 0, "refusal") + self._tail(body)
        return ScriptedResponse.sse(events)

    def truncated_answer_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A streamed answer ending with ``response.incomplete`` (max_output_tokens)."""
        body = self.response(
            [self.message_item(text)], usage, status="incomplete", incomplete="max_output_tokens"
        )
        return ScriptedResponse.sse(self._head() + self._text_events(text, 0) + self._tail(body))

    def tool_calls_stream(
        self, calls: list[Call], usage: TokenUsage, reasoning: list[dict[str, Any]] | None = None
    ) -> ScriptedResponse:
        """Streamed function calls: each announced, its arguments in fragments, then done."""
        reasoning = reasoning or []
        items = [self.call_item(i, call) for i, call in enumerate(calls)]
        body = self.response([*reasoning, *items], usage)
        events = self._head() + self._reasoning_events(reasoning)
        for offset, item in enumerate(items):
            index = len(reasoning) + offset
            opened = {**item, "arguments": "", "status": "in_progress"}
            added = self._event("response.output_item.added", output_index=index, item=opened)
            events.append(added)
            for piece in _pieces(item["arguments"]):
                events.append(
                    self._event(
                        "response.function_call_arguments.delta",
                        item_id=item["id"],
                        output_index=index,
                        delta=piece,
                    )
                )
            events.append(
                self._event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    arguments=item["arguments"],
                )
            )
            events.append(self._event("response.output_item.done", output_index=index, item=item))
        return ScriptedResponse.sse(events + self._tail(body))

    def tool_call_stream(
        self, call_id: str, name: str, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """One streamed function call."""
        return self.tool_calls_stream([(call_id, name, arguments)], usage)

    def truncated_stream(self) -> ScriptedResponse:
        """A stream cut mid-answer (no ``response.completed``)."""
        return ScriptedResponse.sse((self._head() + self._text_events("Sunny and", 0))[:4])

    def failed_stream(self, code: str, message: str) -> ScriptedResponse:
        """A stream ending with ``response.failed``."""
        body = self.response([], TokenUsage(), status="failed")
        body["error"] = {"code": code, "message": message}
        return ScriptedResponse.sse([*self._head(), self._event("response.failed", response=body)])


__all__ = ["ResponsesWire"]
