"""Compact encodings shared by the SQLite stores: JSON, timestamps, row keys."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from avo.events import EventType
from avo.exceptions import StorageError
from avo.storage.text import is_utf8

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SEQUENCE_BITS = 32
SEQUENCE_MASK = (1 << SEQUENCE_BITS) - 1


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_encode: Callable[[Any, int], list[str]] | None = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, _not_json, encode_basestring, None, ":", ",", False, False, True)
)
_slow_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_ascii_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode


def dumps(value: Any) -> str:
    """Compact JSON used for every stored value (``json.dumps`` with compact separators and
    ``ensure_ascii=False``, through one C encoder built once instead of one per call).

    Text UTF-8 cannot encode (lone surrogates, which ``os.fsdecode`` makes of
    undecodable file-name bytes) is written as JSON ``\\uXXXX`` escapes instead,
    which :func:`json.loads` turns back into the same string: lossless.
    """
    text = _slow_dumps(value) if _encode is None else "".join(_encode(value, 0))
    if is_utf8(text):
        return text
    return _ascii_dumps(value)


def checked_text(text: str, what: str, run_id: str) -> str:
    """``text`` unchanged, or a StorageError when SQLite could not store it (a lone surrogate)."""
    if is_utf8(text):
        return text
    raise StorageError(
        f"run {run_id!r}: {what} {text!r} holds text that is not valid Unicode (a lone "
        "surrogate, as os.fsdecode makes of undecodable bytes); nothing was stored. Use "
        "valid text (decode such bytes with errors='replace', or escape them)"
    )


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


_CODE_BY_TYPE: dict[EventType, int | str] = {
    kind: _EVENT_CODES.get(kind.value, kind.value) for kind in EventType
}


def encode_type(kind: EventType) -> int | str:
    """An event type as its one-byte code (or its name when it has none)."""
    return _CODE_BY_TYPE[kind]


def decode_type(stored: int | str) -> EventType:
    """Inverse of :func:`encode_type`."""
    return EventType(_EVENT_NAMES[stored] if isinstance(stored, int) else stored)


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_is_canonical_uuid = _CANONICAL_UUID.fullmatch


def encode_id(text: str) -> bytearray | str:
    """A canonical UUID string (lower-case 8-4-4-4-12 hex) as its 16 bytes; any other id as itself.

    Only a string that :func:`decode_id` gives back exactly is packed, so every
    id round-trips unchanged. The bytes come as a ``bytearray``: sqlite3 binds
    it as a BLOB directly, where a ``bytes`` value first goes through the
    adapter lookup (two caught AttributeErrors per value).
    """
    if _is_canonical_uuid(text) is None:
        return text
    return bytearray.fromhex(text.replace("-", ""))


def decode_id(stored: bytes | bytearray | str) -> str:
    """Inverse of :func:`encode_id` (the database gives the BLOB back as ``bytes``)."""
    if isinstance(stored, str):
        return stored
    h = stored.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
