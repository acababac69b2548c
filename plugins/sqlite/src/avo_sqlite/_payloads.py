"""Event payloads as stored: compact JSON, minus what the row already says elsewhere.

Most of an event log's bytes are payloads, and several payloads repeat a value
the same payload (or the row) already holds. Since schema 2 a payload is
stored in one of three forms, told apart by its first character:

- ``{...``: the payload's compact JSON (every payload of schema 1 files);
- ``=`` + two letters: a STATE_CHANGED payload that is exactly
  ``{"from_state": ..., "to_state": ...}`` with two known states;
- ``~`` + one hex digit + JSON: the payload without the copies listed in
  :data:`_COPIES` for its event type (the digit's bits say which were left
  out), e.g. a tool result's ``tool_call_id`` equal to the event's, or an
  approval's ``idempotency_key`` equal to ``"{run_id}:{tool_call_id}"``.

A copy is left out only when its JSON text is identical to the value it is
rebuilt from, so :func:`decode_payload` returns a payload equal to the one
stored (its keys may come in another order).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from avo.events import AgentEvent, EventType
from avo_sqlite._codec import SEQUENCE_BITS, checked_text, dumps, encode_id, encode_type, to_us

# Stable codes (part of the file format): append new states, never reorder.
_STATES = [
    "created",
    "model_pending",
    "decision_received",
    "tool_pending",
    "approval_pending",
    "tool_executing",
    "observation_recorded",
    "paused",
    "completed",
    "failed",
    "stopped",
    "cancelled",
]
_STATE_CODE = {name: chr(ord("a") + index) for index, name in enumerate(_STATES)}
_STATE_NAME = {code: name for name, code in _STATE_CODE.items()}

Payload = dict[str, Any]
# A copy: (where it is, how to rebuild it from the rest of the payload and the run id).
# ``where`` is (key,) at the top level or (key, inner key) one level down.
Source = Callable[[Payload, str], Any]
_MISSING = object()


def _field(*path: str) -> Source:
    def source(payload: Payload, run_id: str) -> Any:
        value: Any = payload
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return _MISSING
            value = value[key]
        return value

    return source


def _idempotency_key(payload: Payload, run_id: str) -> Any:
    call_id = payload.get("tool_call_id")
    return f"{run_id}:{call_id}" if isinstance(call_id, str) else _MISSING


_RESULT_COPIES: list[tuple[tuple[str, ...], Source]] = [
    (("result", "tool_call_id"), _field("tool_call_id")),
    (("result", "tool_name"), _field("name")),
    (("result", "success"), _field("success")),
    (("result", "duration_ms"), _field("duration_ms")),
]
_COPIES: dict[EventType, list[tuple[tuple[str, ...], Source]]] = {
    EventType.TOOL_COMPLETED: _RESULT_COPIES,
    EventType.TOOL_FAILED: _RESULT_COPIES,
    EventType.TOOL_APPROVAL_REQUESTED: [(("idempotency_key",), _idempotency_key)],
    EventType.MODEL_RESPONDED: [(("usage",), _field("response", "usage"))],
}
# the stored form spends one hex digit on the mask of left-out copies
assert all(len(copies) <= 4 for copies in _COPIES.values())


def _same(a: Any, b: Any) -> bool:
    """Identical once stored: same JSON text (so 1 vs 1.0 vs True are told apart)."""
    if a is b:  # one object (the runtime shares a response's usage): one text
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is str or kind is int or kind is bool:
        return bool(a == b)
    if kind is float:  # json writes a float as its repr (-0.0 and 0.0 differ, nan is NaN)
        return repr(a) == repr(b)
    try:
        return dumps(a) == dumps(b)
    except (TypeError, ValueError):
        return False


def encode_payload(kind: EventType, payload: Payload, run_id: str) -> str:
    """The stored text of an event's payload (see the module docstring)."""
    if kind is EventType.STATE_CHANGED and len(payload) == 2:
        source, target = payload.get("from_state"), payload.get("to_state")
        if isinstance(source, str) and isinstance(target, str):
            a, b = _STATE_CODE.get(source), _STATE_CODE.get(target)
            if a is not None and b is not None:
                return "=" + a + b
        return dumps(payload)
    copies = _COPIES.get(kind)
    if copies is None:
        return dumps(payload)
    mask = 0
    reduced = payload
    for bit, (where, source_of) in enumerate(copies):
        holder = reduced if len(where) == 1 else reduced.get(where[0])
        if not isinstance(holder, dict) or where[-1] not in holder:
            continue
        rebuilt = source_of(reduced, run_id)
        if rebuilt is _MISSING or not _same(holder[where[-1]], rebuilt):
            continue
        if reduced is payload:
            reduced = dict(payload)
        if len(where) == 1:
            del reduced[where[0]]
        else:
            inner = reduced[where[0]] = dict(holder)
            del inner[where[-1]]
        mask |= 1 << bit
    if not mask:
        return dumps(payload)
    return f"~{mask:x}{dumps(reduced)}"


def _copy(value: Any) -> Any:
    return json.loads(dumps(value)) if isinstance(value, dict | list) else value


def decode_payload(kind: EventType, text: str, run_id: str) -> Payload:
    """Inverse of :func:`encode_payload`."""
    first = text[:1]
    if first == "=":
        return {"from_state": _STATE_NAME[text[1]], "to_state": _STATE_NAME[text[2]]}
    if first != "~":
        payload: Payload = json.loads(text)
        return payload
    mask = int(text[1], 16)
    payload = json.loads(text[2:])
    copies = _COPIES[kind]
    # Rebuild in reverse: a copy is rebuilt from what was there when it was left out.
    for bit in reversed(range(len(copies))):
        if mask & (1 << bit):
            where, source_of = copies[bit]
            value = _copy(source_of(payload, run_id))
            if len(where) == 1:
                payload[where[0]] = value
            else:
                payload[where[0]][where[1]] = value
    return payload


INSERT_EVENT = (
    "INSERT INTO events (event_key, event_id, event_type, created_us, payload, parent_event_id)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
# Events without a parent (nearly all): NULL in the SQL, not a bound None, which
# sqlite3 would send through its adapter lookup first.
INSERT_ROOT_EVENT = (
    "INSERT INTO events (event_key, event_id, event_type, created_us, payload, parent_event_id)"
    " VALUES (?, ?, ?, ?, ?, NULL)"
)

EventRow = tuple[int, bytearray | str, int | str, int, str]


def event_row(run_key: int, event: AgentEvent) -> EventRow:
    """The ``events`` row of a numbered event, without its parent (see :func:`insert_events`)."""
    event_id = encode_id(event.event_id)
    if type(event_id) is str:  # not a canonical UUID: bound as text
        event_id = checked_text(event_id, "event id", event.run_id)
    return (
        (run_key << SEQUENCE_BITS) | event.sequence,
        event_id,
        encode_type(event.event_type),
        to_us(event.created_at),
        encode_payload(event.event_type, event.payload, event.run_id),
    )


def insert_events(conn: sqlite3.Connection, run_key: int, events: list[AgentEvent]) -> None:
    """Insert numbered events of one run (one ``executemany`` when none has a parent)."""
    rows = [event_row(run_key, event) for event in events]
    if all(event.parent_event_id is None for event in events):
        conn.executemany(INSERT_ROOT_EVENT, rows)
        return
    parents = [
        None
        if event.parent_event_id is None
        else checked_text(event.parent_event_id, "parent event id", event.run_id)
        for event in events
    ]
    conn.executemany(
        INSERT_EVENT, [(*row, parent) for row, parent in zip(rows, parents, strict=True)]
    )
