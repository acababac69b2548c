"""The ``recall`` tool: fetch an elided tool output back from the event that holds it.

An elided output is shown to the model as a stub naming its tool call id. The
full output stays in the run's ``tool_completed`` (or ``tool_failed``) event;
``recall(id)`` finds that event in the current run, then in the earlier runs
of the run's session (newest first), and returns the output (cut at
``max_chars``). It reads only: its risk is ``inspect``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from avo.bundles import BundleRun
from avo.events import EventType
from avo.exceptions import ToolExecutionError, ToolValidationError
from avo.models import ToolMetadata
from avo.risk import ToolRisk
from avo.sessions import session_store_of
from avo.tools import canonical_json

RESULT_EVENTS = frozenset({EventType.TOOL_COMPLETED, EventType.TOOL_FAILED})


class RecallArguments(BaseModel):
    """Which elided output to fetch."""

    id: str = Field(min_length=1, description="the id the elided output's stub names")


async def _runs_to_search(run: BundleRun) -> list[str]:
    runs = [run.run_id]
    sessions = session_store_of(run.event_store) if run.session_id else None
    if sessions is not None and run.session_id is not None:
        record = await sessions.get_session(run.session_id)
        if record is not None:
            runs += [r for r in reversed(record.run_ids) if r != run.run_id]
    return runs


def _output_text(payload: dict[str, Any]) -> str:
    result = payload.get("result")
    if isinstance(result, dict):
        if result.get("success") is False:
            return f"(the call failed) {result.get('error')}"
        output = result.get("output")
        return output if isinstance(output, str) else canonical_json(output)
    return canonical_json(payload)


class RecallTool:
    """The ``recall`` tool of one run."""

    def __init__(self, run: BundleRun, *, max_chars: int = 20_000) -> None:
        self.run = run
        self.max_chars = max_chars
        self._metadata = ToolMetadata(
            name="recall",
            description=(
                "Fetch the full output of an earlier tool call that was elided from the "
                "conversation to save context. Pass the id named in the elided output."
            ),
            input_schema=RecallArguments.model_json_schema(),
            risk=ToolRisk.INSPECT,
        )

    @property
    def metadata(self) -> ToolMetadata:
        """What the model is told about ``recall``."""
        return self._metadata

    async def invoke(self, arguments: Mapping[str, Any]) -> str:
        """Find the output of tool call ``arguments["id"]``."""
        try:
            wanted = RecallArguments.model_validate(dict(arguments)).id
        except ValidationError as exc:
            raise ToolValidationError(
                f"Invalid arguments for tool 'recall': {exc}", tool_name="recall"
            ) from exc
        store = self.run.event_store
        for run_id in await _runs_to_search(self.run):
            for event in await store.get_events(run_id):
                if (
                    event.event_type in RESULT_EVENTS
                    and event.payload.get("tool_call_id") == wanted
                ):
                    return self._render(event, run_id)
        raise ToolExecutionError(
            f"no tool output with id {wanted!r} in this run or its session; pass the id an "
            "elided output names (the text after 'recall with id')"
        )

    def _render(self, event: Any, run_id: str) -> str:
        text = _output_text(event.payload)
        name = event.payload.get("name", "the tool")
        if len(text) > self.max_chars:
            text = text[: self.max_chars] + f"\n[... {len(text) - self.max_chars} more characters]"
        where = "this run" if run_id == self.run.run_id else f"run {run_id} of this session"
        return (
            f"Recalled output of {name} (tool call {event.payload.get('tool_call_id')}, "
            f"event {event.sequence} of {where}):\n{text}"
        )


__all__ = ["RecallArguments", "RecallTool"]
