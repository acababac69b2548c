"""Compact encodings shared by the SQLite stores: JSON, timestamps, row keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

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
