"""Delta checkpoints: a checkpoint writes only what changed since the previous one.

A :class:`avo.models.Checkpoint` is split in two:

- the *head*: the small scalar fields (state, next_step, token usage, policy,
  pending response, ...), one ``avo_checkpoints`` row per checkpoint;
- the *list fields* that grow with the run (messages, fingerprints, completed
  tool-call ids): one ``avo_checkpoint_items`` row per item, keyed by
  (run, field, position), shared by successive checkpoints.

Saving compares each list with the previous checkpoint's and writes from the
first position that differs (normally: just the items appended since), then
drops positions past the new end. So a long run costs O(new items) of I/O per
checkpoint, not O(history). Only the latest checkpoint is reconstructable,
which is all ``get_latest_checkpoint`` and resume need.

The previous lists are cached per store instance and trusted only while the
run row says no other writer checkpointed since; otherwise they are read back
once from the database.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from avo.models import Checkpoint

LIST_FIELDS: tuple[str, ...] = (
    "messages",
    "repeated_action_history",
    "observation_fingerprints",
    "model_response_fingerprints",
    "progress_markers",
    "completed_tool_call_ids",
)
_SET_FIELDS = frozenset({"completed_tool_call_ids"})


def dumps(value: Any) -> str:
    """Compact JSON text, as stored in ``json`` columns.

    Non-ASCII text is stored as is, unless it holds something UTF-8 cannot
    encode (a lone surrogate), which is then escaped instead of failing.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"))
    return text


@dataclass
class CachedLists:
    """The list fields of the latest checkpoint this instance knows, as stored."""

    ordinal: int
    checkpoint_id: str | None = None
    lists: dict[str, list[Any]] = field(default_factory=dict)


def _as_list(name: str, value: Any, previous: list[Any]) -> list[Any]:
    if name not in _SET_FIELDS:
        return list(value)
    # Keep the stored order for ids already there, append new ones sorted, so
    # a growing set is a pure append.
    current = set(value)
    kept = [item for item in previous if item in current]
    return kept + sorted(current.difference(kept))


def _first_difference(new: list[Any], old: list[Any]) -> int:
    shared = min(len(new), len(old))
    if new[:shared] == old[:shared]:
        return shared
    for index in range(shared):
        if new[index] != old[index]:
            return index
    return shared


async def load_lists(conn: Any, run_id: str, ordinal: int) -> CachedLists:
    """Read the list fields of the run's latest checkpoint (ordinal ``ordinal``)."""
    cached = CachedLists(ordinal=ordinal, lists={name: [] for name in LIST_FIELDS})
    if ordinal == 0:
        return cached
    row = await conn.fetchrow(
        "SELECT checkpoint_id, lengths FROM avo_checkpoints WHERE run_id = $1 AND ordinal = $2",
        run_id,
        ordinal,
    )
    lengths: dict[str, int] = json.loads(row["lengths"]) if row else {}
    cached.checkpoint_id = row["checkpoint_id"] if row else None
    rows = await conn.fetch(
        "SELECT field, position, value FROM avo_checkpoint_items WHERE run_id = $1 "
        "ORDER BY field, position",
        run_id,
    )
    for row in rows:
        name = row["field"]
        if name in cached.lists and row["position"] < lengths.get(name, 0):
            cached.lists[name].append(json.loads(row["value"]))
    return cached


async def write_checkpoint(
    conn: Any, checkpoint: Checkpoint, ordinal: int, previous: CachedLists
) -> CachedLists:
    """Store ``checkpoint`` as ordinal ``ordinal`` given the previous lists; return the new ones.

    Runs inside the caller's transaction, which holds the run row lock.
    """
    run_id = checkpoint.run_id
    new_lists: dict[str, list[Any]] = {}
    lengths: dict[str, int] = {}
    upserts: list[tuple[str, str, int, str]] = []
    trims: list[tuple[str, str, int]] = []
    for name in LIST_FIELDS:
        old = previous.lists.get(name, [])
        value = getattr(checkpoint, name)
        new = _as_list(name, value, old)
        start = _first_difference(new, old)
        changed = new[start:]
        upserts.extend((run_id, name, start + i, dumps(item)) for i, item in enumerate(changed))
        if len(old) > len(new):
            trims.append((run_id, name, len(new)))
        new_lists[name] = old[:start] + copy.deepcopy(changed)
        lengths[name] = len(new)
    if upserts:
        await conn.executemany(
            "INSERT INTO avo_checkpoint_items (run_id, field, position, value) "
            "VALUES ($1, $2, $3, $4::json) ON CONFLICT (run_id, field, position) "
            "DO UPDATE SET value = EXCLUDED.value",
            upserts,
        )
    if trims:
        await conn.executemany(
            "DELETE FROM avo_checkpoint_items WHERE run_id = $1 AND field = $2 AND position >= $3",
            trims,
        )
    head = checkpoint.model_dump(mode="json", exclude=set(LIST_FIELDS))
    await conn.execute(
        "INSERT INTO avo_checkpoints (run_id, ordinal, checkpoint_id, created_at, head, lengths) "
        "VALUES ($1, $2, $3, $4, $5::json, $6::json)",
        run_id,
        ordinal,
        checkpoint.checkpoint_id,
        checkpoint.created_at,
        dumps(head),
        dumps(lengths),
    )
    return CachedLists(ordinal=ordinal, checkpoint_id=checkpoint.checkpoint_id, lists=new_lists)


async def read_latest(conn: Any, run_id: str) -> Checkpoint | None:
    """The full latest checkpoint of ``run_id``, or None when it has none."""
    row = await conn.fetchrow(
        "SELECT ordinal, head FROM avo_checkpoints WHERE run_id = $1 ORDER BY ordinal DESC LIMIT 1",
        run_id,
    )
    if row is None:
        return None
    lists = await load_lists(conn, run_id, row["ordinal"])
    data = json.loads(row["head"])
    data.update(lists.lists)
    return Checkpoint.model_validate(data)
