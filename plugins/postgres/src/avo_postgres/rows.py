"""Decoding stored rows back into avo models."""

from __future__ import annotations

import json
from typing import Any

from avo.events import AgentEvent, EventType
from avo.models import RunRecord
from avo.state import RunState, is_terminal


def decode_record(text: str) -> RunRecord:
    """A run record from its stored JSON."""
    return RunRecord.model_validate_json(text)


def decode_event(row: Any) -> AgentEvent:
    """An event from its ``avo_events`` row."""
    return AgentEvent(
        event_id=row["event_id"],
        run_id=row["run_id"],
        sequence=row["sequence"],
        event_type=EventType(row["event_type"]),
        created_at=row["created_at"],
        payload=json.loads(row["payload"]),
        parent_event_id=row["parent_event_id"],
    )


def row_is_terminal(row: Any) -> bool:
    """Whether a run row (``log_terminal``, ``state``) is finished."""
    return bool(row["log_terminal"]) or is_terminal(RunState(row["state"]))
