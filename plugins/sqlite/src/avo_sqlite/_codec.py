"""Compact encodings shared by the SQLite stores: JSON, timestamps, row keys."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from avo.events import EventType

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SEQUENCE_BITS = 32
SEQUENCE_MASK = (1 << SEQUENCE_BITS) - 1


def dumps(value: Any) -> str:
    """Compact JSON used for every stored value."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def to_us(moment: datetime) -> int:
    """An aware datetime as integer microseconds since the epoch (exact)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(micros: int) -> datetime:
    """The UTC datetime of :func:`to_us` (the same instant, so equal to the original)."""
    return _EPOCH + timedelta(microseconds=micros)


def row_key(run_key: int, number: int) -> int:
    """The rowid of a run's event (by sequence) or checkpoint (by position)."""
    return (run_key << SEQUENCE_BITS) | number


def key_range(run_key: int) -> tuple[int, int]:
    """First and last possible rowid of one run's events or checkpoints."""
    return run_key << SEQUENCE_BITS, (run_key << SEQUENCE_BITS) | SEQUENCE_MASK


# Stable one-byte codes for the event types known when schema 1 was written; a type
# added later is stored by name (both forms decode).
_EVENT_CODES: dict[str, int] = {
    name: code
    for code, name in enumerate(
        [
            "run_created",
            "state_changed",
            "model_requested",
            "model_responded",
            "model_failed",
            "route_failover",
            "saver_applied",
            "tool_requested",
            "tool_approval_requested",
            "tool_approved",
            "tool_denied",
            "tool_started",
            "tool_completed",
            "tool_failed",
            "policy_triggered",
            "checkpoint_created",
            "run_resumed",
            "run_completed",
            "run_failed",
            "run_stopped",
            "run_cancelled",
        ],
        start=1,
    )
}
_EVENT_NAMES = {code: name for name, code in _EVENT_CODES.items()}


def encode_type(kind: EventType) -> int | str:
    """An event type as its one-byte code (or its name when it has none)."""
    return _EVENT_CODES.get(kind.value, kind.value)


def decode_type(stored: int | str) -> EventType:
    """Inverse of :func:`encode_type`."""
    return EventType(_EVENT_NAMES[stored] if isinstance(stored, int) else stored)


def encode_id(text: str) -> bytes | str:
    """A canonical UUID string as its 16 bytes; any other id as itself."""
    try:
        parsed = uuid.UUID(text)
    except ValueError:
        return text
    return parsed.bytes if str(parsed) == text else text


def decode_id(stored: bytes | str) -> str:
    """Inverse of :func:`encode_id`."""
    return str(uuid.UUID(bytes=stored)) if isinstance(stored, bytes) else stored
