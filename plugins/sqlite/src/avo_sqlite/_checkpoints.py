"""Delta checkpoints: each save writes only what changed since the previous one.

A :class:`~avo.models.Checkpoint` is split into a small *head* (one row in
``checkpoints``: state, counters, policy, provider snapshot, pending response)
and the fields that grow with the run — ``messages``, the loop-detector
histories and ``completed_tool_call_ids`` — kept as *lineages* of items in
``checkpoint_items``. A lineage is identified by ``(run_id, field, base)``; a
head records, per field, which lineage it uses and how many of its items.

Saving appends only the new items to the previous checkpoint's lineage when the
new value extends the old one, so per-step bytes and time stay flat however
long the run gets. When a value does not extend the previous one (a compacted
conversation, a sliding window of fingerprints, a removed id), the field starts
a new lineage holding its full value.

Whether a list extends the previous value is decided by comparing the stored
prefix in full (one C-level list comparison in the worker thread, about 60 ns
a message), the id set by inclusion: an edit anywhere is never missed.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from avo.models import Checkpoint

LIST_FIELDS: tuple[str, ...] = (
    "messages",
    "repeated_action_history",
    "observation_fingerprints",
    "model_response_fingerprints",
    "progress_markers",
)
SET_FIELD = "completed_tool_call_ids"
DELTA_FIELDS: tuple[str, ...] = (*LIST_FIELDS, SET_FIELD)


def dumps(value: Any) -> str:
    """Compact JSON used for every stored value."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass
class _Lineage:
    base: int
    count: int
    # What is needed to tell whether a new value extends this one.
    full: list[Any] | None = None
    members: set[str] | None = None


@dataclass
class CheckpointCursor:
    """In-memory summary of a run's latest stored checkpoint (per store)."""

    position: int
    lineages: dict[str, _Lineage]


def _lineage_for(name: str, base: int, value: Any) -> _Lineage:
    if name == SET_FIELD:
        return _Lineage(base=base, count=len(value), members=set(value))
    return _Lineage(base=base, count=len(value), full=list(value))


def save_delta(
    conn: sqlite3.Connection,
    cursor: CheckpointCursor | None,
    checkpoint: Checkpoint,
) -> CheckpointCursor:
    """Write ``checkpoint`` as a head row plus the items new since ``cursor``.

    Runs inside the caller's transaction. ``cursor`` must describe the run's
    latest stored checkpoint (or be None when the run has none).
    """
    run_id = checkpoint.run_id
    position = 1 if cursor is None else cursor.position + 1
    lineages: dict[str, _Lineage] = {}
    rows: list[tuple[str, str, int, int, str]] = []
    for name in DELTA_FIELDS:
        value = getattr(checkpoint, name)
        old = cursor.lineages.get(name) if cursor is not None else None
        if name == SET_FIELD:
            members: set[str] = value
            if old is not None and old.members is not None and old.members <= members:
                added = sorted(members - old.members)
                start, base = old.count, old.base
                new_items: list[Any] = added
            else:
                start, base, new_items = 0, position, sorted(members)
            lineage = _Lineage(base=base, count=start + len(new_items), members=set(members))
        else:
            if old is not None and old.full is not None and value[: old.count] == old.full:
                start, base = old.count, old.base
            else:
                start, base = 0, position
            new_items = value[start:]
            lineage = _Lineage(base=base, count=len(value), full=list(value))
        rows.extend(
            (run_id, name, base, start + offset, dumps(item))
            for offset, item in enumerate(new_items)
        )
        lineages[name] = lineage
    head = checkpoint.model_dump(mode="json", exclude=set(DELTA_FIELDS))
    head["lineages"] = {name: [lin.base, lin.count] for name, lin in lineages.items()}
    if rows:
        conn.executemany(
            "INSERT INTO checkpoint_items (run_id, field, base, idx, value) VALUES (?, ?, ?, ?, ?)",
            rows,
        )
    conn.execute(
        "INSERT INTO checkpoints (run_id, position, checkpoint_id, created_at, head)"
        " VALUES (?, ?, ?, ?, ?)",
        (run_id, position, checkpoint.checkpoint_id, head["created_at"], dumps(head)),
    )
    return CheckpointCursor(position=position, lineages=lineages)


def latest_position(conn: sqlite3.Connection, run_id: str) -> int | None:
    """The position of the run's latest checkpoint, or None."""
    row = conn.execute(
        "SELECT MAX(position) FROM checkpoints WHERE run_id = ?", (run_id,)
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def load_latest(
    conn: sqlite3.Connection, run_id: str
) -> tuple[Checkpoint, CheckpointCursor] | None:
    """Read the run's latest checkpoint in full (and a cursor describing it)."""
    row = conn.execute(
        "SELECT position, head FROM checkpoints WHERE run_id = ? ORDER BY position DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    if row is None:
        return None
    position, raw_head = int(row[0]), row[1]
    head: dict[str, Any] = json.loads(raw_head)
    refs: dict[str, list[int]] = head.pop("lineages")
    data = dict(head)
    lineages: dict[str, _Lineage] = {}
    for name in DELTA_FIELDS:
        base, count = refs[name]
        items = [
            json.loads(value)
            for (value,) in conn.execute(
                "SELECT value FROM checkpoint_items WHERE run_id = ? AND field = ? AND base = ?"
                " AND idx < ? ORDER BY idx",
                (run_id, name, base, count),
            )
        ]
        if len(items) != count:
            from avo.exceptions import StorageError

            raise StorageError(
                f"run {run_id}: checkpoint {position} is missing {name} items "
                f"({len(items)} of {count} stored); the database is damaged"
            )
        data[name] = set(items) if name == SET_FIELD else items
        lineages[name] = _lineage_for(name, base, items)
        lineages[name].count = count
    checkpoint = Checkpoint.model_validate(data)
    return checkpoint, CheckpointCursor(position=position, lineages=lineages)
