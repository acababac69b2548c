"""Delta checkpoints: each save writes only what changed since the previous one.

A :class:`~avo.models.Checkpoint` is split into a small *head* (one row in
``checkpoints``: state, counters, pending response, references) and the parts
that grow or repeat:

- the fields that grow with the run — ``messages``, the loop-detector
  histories and ``completed_tool_call_ids`` — kept as *lineages* of items in
  ``checkpoint_items`` (identified by run, field and ``base``, the position of
  the checkpoint that started the lineage). Saving appends only the new items
  when the value extends the previous one, also after dropping a prefix (a
  sliding window of fingerprints); a value that does not (a compacted
  conversation, a removed id) starts a new lineage holding its full value.
  Whether a list extends the previous value is decided by comparing the
  stored items in full (C-level list comparisons; the runtime shares message
  objects between checkpoints, so they are mostly identity checks), the id set
  by inclusion: an edit anywhere is never missed.
- the dict fields ``policy``, ``provider_metadata``, ``user_state`` and
  ``shaper_state`` (the request shapers' state, by shaper), stored
  key by key: small values inline, large ones (a FakeProvider's script) once
  in ``checkpoint_items`` and referenced while they stay equal. A whole field
  equal to the previous checkpoint's is one reference.

So per-step bytes and time stay flat however long the run gets, while
:func:`load_latest` reassembles the full checkpoint.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from avo.exceptions import StorageError
from avo.models import Checkpoint
from avo.storage.text import is_utf8
from avo_sqlite._codec import (
    checked_text,
    decode_id,
    dumps,
    encode_id,
    from_us,
    key_range,
    row_key,
    to_us,
)

LIST_FIELDS: tuple[str, ...] = (
    "messages",
    "repeated_action_history",
    "observation_fingerprints",
    "model_response_fingerprints",
    "progress_markers",
)
SET_FIELD = "completed_tool_call_ids"
DELTA_FIELDS: tuple[str, ...] = (*LIST_FIELDS, SET_FIELD)
PART_FIELDS: tuple[str, ...] = ("policy", "provider_metadata", "user_state", "shaper_state")
_HEAD_EXCLUDE = {*DELTA_FIELDS, *PART_FIELDS, "run_id", "checkpoint_id", "created_at"}
_INLINE_LIMIT = 96  # bytes of JSON up to which a value is kept in the head row
_SEP = "\x1f"


@dataclass
class _Lineage:
    base: int
    count: int
    start: int = 0  # index of the value's first item in the lineage (a sliding window moves it)
    full: list[Any] | None = None
    members: set[str] | None = None


@dataclass
class CheckpointCursor:
    """In-memory summary of a run's latest stored checkpoint (per store)."""

    position: int
    lineages: dict[str, _Lineage]
    next_item: int = 1  # the number (low bits of the rowid) of the run's next item row
    # field -> (value, stored reference); (field, key) -> (value, base of its item row)
    fields: dict[str, tuple[Any, list[Any]]] = field(default_factory=dict)
    parts: dict[tuple[str, str], tuple[Any, int]] = field(default_factory=dict)


def _lineage(name: str, base: int, value: Any, start: int = 0) -> _Lineage:
    if name == SET_FIELD:
        return _Lineage(base=base, count=len(value), members=set(value))
    return _Lineage(base=base, count=len(value), start=start, full=list(value))


def _shift(old: list[Any], new: list[Any]) -> int | None:
    """How many items ``new`` dropped from the front of ``old`` before appending, if it did.

    ``0`` is a pure append; ``k`` a sliding window (``new`` starts with ``old[k:]``);
    None when ``new`` is not ``old`` minus a prefix plus a suffix.
    """
    size = len(old)
    if new[:size] == old:
        return 0
    if not new:
        return None
    first = new[0]
    for k in range(1, size):
        if old[k] == first and old[k:] == new[: size - k]:
            return k
    return None


Row = tuple[int, str, int, int, str]


def _save_lineage(
    run_key: int, name: str, value: Any, old: _Lineage | None, position: int, rows: list[Row]
) -> _Lineage:
    size = len(value)
    if old is not None and (old.full is value or old.members is value) and old.count == size:
        return old  # the runtime shares an unchanged copy between checkpoints: nothing new
    if name == SET_FIELD:
        members: set[str] = value
        added: set[str] | None = None
        if old is not None and old.members is not None and len(members) >= len(old.members):
            added = members - old.members
            # |added| == |new| - |old| exactly when every old id is still there (one pass)
            if len(added) != len(members) - len(old.members):
                added = None
        if old is not None and added is not None:
            start, base, new_items = old.count, old.base, sorted(added)
        else:
            start, base, new_items = 0, position, sorted(members)
        # The checkpoint's own (fresh) set and lists are kept, not copied: values
        # handed to the store are not mutated afterwards (models are values).
        lineage = _Lineage(base=base, count=start + len(new_items), members=members)
    else:
        shift = None if old is None or old.full is None else _shift(old.full, value)
        if old is not None and shift is not None:
            # keep the lineage: items up to old.start + old.count exist, append the rest
            first = old.start + shift
            kept = old.count - shift
            start, base, new_items = old.start + old.count, old.base, value[kept:]
        else:
            first, start, base, new_items = 0, 0, position, value
        lineage = _Lineage(base=base, count=len(value), start=first, full=value)
    if new_items:
        rows.extend(
            (run_key, name, base, start + offset, dumps(item))
            for offset, item in enumerate(new_items)
        )
    return lineage


def _save_parts(
    run_key: int,
    name: str,
    value: dict[str, Any],
    cursor: CheckpointCursor | None,
    position: int,
    rows: list[Row],
    out: CheckpointCursor,
) -> list[Any]:
    previous = cursor.fields.get(name) if cursor is not None else None
    if previous is not None and (previous[0] is value or previous[0] == value):
        out.fields[name] = previous
        for key in value:
            if cursor is not None and (name, key) in cursor.parts:
                out.parts[(name, key)] = cursor.parts[(name, key)]
        return previous[1]
    encoded: dict[str, list[Any]] = {}
    for key, item in value.items():
        old = cursor.parts.get((name, key)) if cursor is not None else None
        # identity first: a provider shares unchanged values (a script) between snapshots,
        # and == on a list compares every item even when both sides are one object
        if old is not None and (old[0] is item or old[0] == item):
            encoded[key] = ["r", old[1]]
            out.parts[(name, key)] = old
            continue
        text = dumps(item)
        # a key SQLite cannot hold as text (a lone surrogate) stays inline, in JSON
        if len(text) <= _INLINE_LIMIT or not is_utf8(key):
            encoded[key] = ["i", item]
        else:
            rows.append((run_key, name + _SEP + key, position, 0, text))
            encoded[key] = ["r", position]
            out.parts[(name, key)] = (item, position)
    text = dumps(encoded)
    if len(text) <= _INLINE_LIMIT:
        reference: list[Any] = ["i", encoded]
    else:
        rows.append((run_key, name, position, 0, text))
        reference = ["r", position]
    out.fields[name] = (value, reference)
    return reference


@dataclass
class DeltaPlan:
    """Everything one checkpoint save will write, computed before any statement runs."""

    items: list[tuple[int, int, str, int, int, str]]
    head: tuple[int, bytearray | str, int, str]
    cursor: CheckpointCursor


def plan_delta(
    run_key: int, cursor: CheckpointCursor | None, checkpoint: Checkpoint, next_item: int = 1
) -> DeltaPlan:
    """Split ``checkpoint`` into a head row plus what is new since ``cursor`` (no I/O).

    ``cursor`` must describe the run's latest stored checkpoint (None when the
    run has none; ``next_item`` is then the number of the run's next item row).
    Raises (TypeError, ValueError) for values that are not JSON.
    """
    position = 1 if cursor is None else cursor.position + 1
    if cursor is not None:
        next_item = cursor.next_item
    rows: list[Row] = []
    out = CheckpointCursor(position=position, lineages={})
    for name in DELTA_FIELDS:
        old = cursor.lineages.get(name) if cursor is not None else None
        out.lineages[name] = _save_lineage(
            run_key, name, getattr(checkpoint, name), old, position, rows
        )
    head = checkpoint.model_dump(mode="json", exclude=_HEAD_EXCLUDE)
    # in DELTA_FIELDS order: [base, count, start] each
    head["lineages"] = [[lin.base, lin.count, lin.start] for lin in out.lineages.values()]
    head["parts"] = {
        name: _save_parts(run_key, name, getattr(checkpoint, name), cursor, position, rows, out)
        for name in PART_FIELDS
    }
    head_row = (
        row_key(run_key, position),
        _checkpoint_id(checkpoint),
        to_us(checkpoint.created_at),
        dumps(head),
    )
    # Item rows are numbered in the order written (rowid run_key << 32 | number), so a
    # checkpoint's new items land together at the end of the table: one page a save.
    first = row_key(run_key, next_item)
    items = [(first + offset, *row) for offset, row in enumerate(rows)]
    out.next_item = next_item + len(rows)
    return DeltaPlan(items=items, head=head_row, cursor=out)


def _checkpoint_id(checkpoint: Checkpoint) -> bytearray | str:
    stored = encode_id(checkpoint.checkpoint_id)
    if type(stored) is str:  # not a canonical UUID: bound as text
        return checked_text(stored, "checkpoint id", checkpoint.run_id)
    return stored


INSERT_ITEM = (
    "INSERT INTO checkpoint_items (rowid, run_key, field, base, idx, value)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
INSERT_HEAD = (
    "INSERT INTO checkpoints (checkpoint_key, checkpoint_id, created_us, head) VALUES (?, ?, ?, ?)"
)


def write_delta(conn: sqlite3.Connection, plan: DeltaPlan) -> CheckpointCursor:
    """Write a planned checkpoint (inside the caller's transaction)."""
    if plan.items:
        conn.executemany(INSERT_ITEM, plan.items)
    conn.execute(INSERT_HEAD, plan.head)
    return plan.cursor


def next_item(conn: sqlite3.Connection, run_key: int) -> int:
    """The number of the run's next checkpoint item row."""
    low, high = key_range(run_key)
    found = conn.execute(
        "SELECT MAX(rowid) FROM checkpoint_items WHERE rowid BETWEEN ? AND ?", (low, high)
    ).fetchone()
    return 1 if found[0] is None else int(found[0]) - low + 1


# A run's items are the rowid range of its key (no index: reads scan the range). The
# run_key test keeps out a row a schema 1 writer still running on the file might add.
_ITEMS = (
    "SELECT value FROM checkpoint_items WHERE rowid BETWEEN ? AND ? AND run_key = ?"
    " AND field = ? AND base = ?"
)


def _item(conn: sqlite3.Connection, run_key: int, name: str, base: int) -> Any:
    low, high = key_range(run_key)
    found = conn.execute(_ITEMS + " AND idx = 0", (low, high, run_key, name, base)).fetchone()
    if found is None:
        raise StorageError(f"a checkpoint is missing its {name!r} value; the database is damaged")
    return json.loads(found[0])


def load_latest(
    conn: sqlite3.Connection, run_id: str, run_key: int
) -> tuple[Checkpoint, CheckpointCursor] | None:
    """Read the run's latest checkpoint in full (and a cursor describing it)."""
    low, high = key_range(run_key)
    row = conn.execute(
        "SELECT checkpoint_key, checkpoint_id, created_us, head FROM checkpoints"
        " WHERE checkpoint_key BETWEEN ? AND ? ORDER BY checkpoint_key DESC LIMIT 1",
        (low, high),
    ).fetchone()
    if row is None:
        return None
    position = int(row[0]) - low
    head: dict[str, Any] = json.loads(row[3])
    refs = dict(zip(DELTA_FIELDS, head.pop("lineages"), strict=True))
    stored_parts: dict[str, list[Any]] = head.pop("parts")
    data = dict(
        head, run_id=run_id, checkpoint_id=decode_id(row[1]), created_at=from_us(int(row[2]))
    )
    cursor = CheckpointCursor(position=position, lineages={}, next_item=next_item(conn, run_key))
    for name in PART_FIELDS:
        if name not in stored_parts:  # a head written before this field was a part
            continue
        kind, payload = stored_parts[name]
        encoded = payload if kind == "i" else _item(conn, run_key, name, int(payload))
        value: dict[str, Any] = {}
        for key, (part_kind, part) in encoded.items():
            if part_kind == "i":
                value[key] = part
            else:
                value[key] = _item(conn, run_key, name + _SEP + key, int(part))
                cursor.parts[(name, key)] = (value[key], int(part))
        data[name] = value
        cursor.fields[name] = (value, [kind, payload])
    for name in DELTA_FIELDS:
        base, count, start = refs[name]
        items = [
            json.loads(text)
            for (text,) in conn.execute(
                _ITEMS + " AND idx >= ? AND idx < ? ORDER BY idx",
                (low, high, run_key, name, base, start, start + count),
            )
        ]
        if len(items) != count:
            raise StorageError(
                f"run {run_id}: checkpoint {position} is missing {name} items "
                f"({len(items)} of {count}); the database is damaged"
            )
        data[name] = set(items) if name == SET_FIELD else items
        cursor.lineages[name] = _lineage(name, base, items, start)
    return Checkpoint.model_validate(data), cursor
