"""The Gemini generateContent wire format, as a scripted loopback server answers it."""

from __future__ import annotations

from typing import Any

from avo.models import TokenUsage
from avo.testing.providers import ScriptedResponse
from avo_providers.wire_fakes._common import Call, _pieces


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

    def text(self, text: str, usage: TokenUsage, finish: str = "STOP") -> ScriptedResponse:
        """A plain answer (``finish="MAX_TOKENS"``: cut off at the output limit)."""
        return ScriptedResponse.json(self._response([{"text": text}], finish, usage))

    def truncated(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """An answer cut off at ``MAX_TOKENS``."""
        return self.text(text, usage, "MAX_TOKENS")

    def refusal(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """A candidate the safety filter stopped (``finishReason: SAFETY``, no parts)."""
        return ScriptedResponse.json(self._response([], "SAFETY", usage))

    def _call_parts(self, calls: list[Call], signature: str | None) -> list[Any]:
        parts = []
        for position, (call_id, name, arguments) in enumerate(calls):
            function: dict[str, Any] = {"name": name, "args": arguments}
            if call_id:
                function["id"] = call_id
            part: dict[str, Any] = {"functionCall": function}
            if signature and position == 0:  # Gemini signs the first call of a turn
                part["thoughtSignature"] = signature
            parts.append(part)
        return parts

    def tool_calls(
        self, calls: list[Call], usage: TokenUsage, signature: str | None = None
    ) -> ScriptedResponse:
        """Several ``functionCall`` parts (``id`` only when the call id is not empty)."""
        parts = self._call_parts(calls, signature)
        return ScriptedResponse.json(self._response(parts, "STOP", usage))

    def tool_calls_stream(
        self, calls: list[Call], usage: TokenUsage, signature: str | None = None
    ) -> ScriptedResponse:
        """Function calls arrive whole, one chunk each; the last chunk finishes."""
        parts = self._call_parts(calls, signature)
        events: list[tuple[str | None, Any]] = [
            (None, self._response([part], None, None)) for part in parts[:-1]
        ]
        events.append((None, self._response(parts[-1:], "STOP", usage)))
        return ScriptedResponse.sse(events)

    def truncated_answer_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """Answer pieces; the last chunk has ``finishReason: MAX_TOKENS``."""
        pieces = _pieces(text)
        events: list[tuple[str | None, Any]] = [
            (None, self._response([{"text": piece}], None, None)) for piece in pieces[:-1]
        ]
        events.append((None, self._response([{"text": pieces[-1]}], "MAX_TOKENS", usage)))
        return ScriptedResponse.sse(events)

    def refusal_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """One chunk without parts, finished by the safety filter."""
        return ScriptedResponse.sse([(None, self._response([], "SAFETY", usage))])

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


__all__ = ["GeminiWire"]
