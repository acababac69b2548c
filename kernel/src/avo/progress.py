"""ProgressDetector: repeated-action and no-progress loop detection."""

from __future__ import annotations

from collections.abc import Iterable

from avo.models import ModelResponse, ToolCall, ToolResult
from avo.tools import (
    call_json,
    canonical_fingerprint,
    sha256_hex,
    tool_call_fingerprint,
    tool_result_fingerprint,
)

DEFAULT_HISTORY_LIMIT = 64
"""Only a bounded tail of each history is kept, so checkpoints stay constant-size."""


def model_response_fingerprint(response: ModelResponse) -> str:
    """Fingerprint of what the model decided (ids excluded): its answer or every call."""
    calls = response.tool_calls
    if not calls:
        return canonical_fingerprint({"content": response.content, "tool_call": None})
    if len(calls) == 1:
        # canonical_json({"content": None, "tool_call": {...}}), assembled from the call's.
        text = f'{{"content":null,"tool_call":{call_json(calls[0])[1]}}}'
    else:  # canonical_json({"content": None, "tool_calls": [{...}, ...]})
        text = f'{{"content":null,"tool_calls":[{",".join(call_json(c)[1] for c in calls)}]}}'
    return sha256_hex(text)


def _trailing_identical(history: list[str], count: int) -> bool:
    if count <= 0 or len(history) < count:
        return False
    last = history[-1]
    if count > 1 and history[-2] != last:  # the usual answer, without a slice
        return False
    return history[-count:].count(last) == count


class ProgressDetector:
    """Records fingerprints of actions, observations, responses and markers.

    Each history keeps its last ``history_limit`` entries (at least what the
    policy's repeated-action limit and no-progress window need).
    """

    def __init__(
        self,
        *,
        action_history: Iterable[str] | None = None,
        observation_history: Iterable[str] | None = None,
        model_history: Iterable[str] | None = None,
        progress_markers: Iterable[str] | None = None,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
    ) -> None:
        self.history_limit = max(1, history_limit)
        keep = -self.history_limit
        self.action_history: list[str] = list(action_history or ())[keep:]
        self.observation_history: list[str] = list(observation_history or ())[keep:]
        self.model_history: list[str] = list(model_history or ())[keep:]
        self.progress_markers: list[str] = list(progress_markers or ())[keep:]

    def _push(self, history: list[str], item: str) -> None:
        history.append(item)
        if len(history) > self.history_limit:
            del history[0]

    def record_action(self, call: ToolCall) -> None:
        """Record a tool call (name + arguments)."""
        self._push(self.action_history, tool_call_fingerprint(call))

    def record_observation(self, result: ToolResult) -> None:
        """Record a tool result."""
        self._push(self.observation_history, tool_result_fingerprint(result))

    def record_model_response(self, response: ModelResponse) -> None:
        """Record a model decision."""
        self._push(self.model_history, model_response_fingerprint(response))

    def record_progress_marker(self, marker: str) -> None:
        """Record an application-defined progress marker."""
        self._push(self.progress_markers, marker)

    def repeated_action(self, limit: int) -> bool:
        """True when the last ``limit`` actions are identical."""
        return _trailing_identical(self.action_history, limit)

    def no_progress(self, window: int) -> bool:
        """True when the trailing ``window`` of observations, responses or markers is all equal."""
        return (
            _trailing_identical(self.observation_history, window)
            or _trailing_identical(self.model_history, window)
            or _trailing_identical(self.progress_markers, window)
        )


def history_limit_for(repeated_action_limit: int, no_progress_window: int) -> int:
    """The history a detector must keep to apply these bounds."""
    return max(DEFAULT_HISTORY_LIMIT, repeated_action_limit, no_progress_window)


__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "ProgressDetector",
    "history_limit_for",
    "model_response_fingerprint",
]
