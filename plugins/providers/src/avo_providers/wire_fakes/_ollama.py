"""The Ollama /api/chat wire format, as a scripted loopback server answers it."""

from __future__ import annotations

from typing import Any

from avo.models import TokenUsage
from avo.testing.providers import ScriptedResponse
from avo_providers.wire_fakes._common import Call, _pieces


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

    def text(self, text: str, usage: TokenUsage, reason: str = "stop") -> ScriptedResponse:
        """A plain answer (``reason="length"``: cut off at ``num_predict``)."""
        body = self._final({"role": "assistant", "content": text}, usage, reason)
        return ScriptedResponse.json(body)

    def truncated(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """An answer cut off at ``num_predict`` (``done_reason: length``)."""
        return self.text(text, usage, "length")

    def tool_calls(self, calls: list[Call], usage: TokenUsage) -> ScriptedResponse:
        """Several tool calls with object arguments (Ollama sends no call ids)."""
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": name, "arguments": arguments}} for _, name, arguments in calls
            ],
        }
        return ScriptedResponse.json(self._final(message, usage))

    def tool_calls_stream(self, calls: list[Call], usage: TokenUsage) -> ScriptedResponse:
        """All the calls in one line, then ``done``."""
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": name, "arguments": arguments}} for _, name, arguments in calls
            ],
        }
        lines = [self._partial(message), self._final({"role": "assistant", "content": ""}, usage)]
        return ScriptedResponse.ndjson(lines)

    def truncated_answer_stream(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """NDJSON pieces then ``done`` with ``done_reason: length``."""
        lines = [self._partial({"role": "assistant", "content": p}) for p in _pieces(text)]
        lines.append(self._final({"role": "assistant", "content": ""}, usage, "length"))
        return ScriptedResponse.ndjson(lines)

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


__all__ = ["OllamaWire"]
