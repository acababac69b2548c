"""Delta checkpoints: a checkpoint writes only what changed since the previous one.

A :class:`avo.models.Checkpoint` is split three ways:

- the *head*: the small scalar fields (state, next_step, token usage, pending
  response, ...), one ``avo_checkpoints`` row per checkpoint;
- the *list fields* that grow with the run (messages, loop-detector histories,
  completed tool-call ids): one ``avo_checkpoint_items`` row per item, keyed by
  (run, field, position) and shared by successive checkpoints. Saving compares
  each list with the previous checkpoint's and writes from the first position
  that differs (normally: just the items appended since), then drops
  positions past the new end;
- the *dict fields* ``policy``, ``provider_metadata``, ``user_state`` and ``shaper_state``, key
  by key: small values inline in the head, large ones (a FakeProvider's
  script) as one ``avo_checkpoint_parts`` row, rewritten only when it changes.

So checkpoint I/O per step stays constant however long the run grows, and all
of it goes into the one statement that appends the CHECKPOINT_CREATED event
(see :mod:`avo_postgres.writes`). Only the latest checkpoint is reconstructable,
which is all ``get_latest_checkpoint`` and resume need.

Change detection compares with the previous checkpoint's values, kept per
store instance by reference: the runtime builds fresh lists and dicts for every
checkpoint and shares the unchanged items, so the comparison is mostly
identity checks. Values handed to ``save_checkpoint`` must not be mutated in
place afterwards (the in-memory store keeps references too). The cache is
trusted only while the run row says no other writer checkpointed since;
otherwise the previous values are read back once from the database.
"""

from __future__ import annotations

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
_SET_FIELD = "completed_tool_call_ids"
PART_FIELDS: tuple[str, ...] = ("policy", "provider_metadata", "user_state", "shaper_state")
_INLINE_LIMIT = 256  # bytes of JSON up to which a dict value is kept in the head


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # built once, not per call


def dumps(value: Any) -> str:
    """Compact JSON text, as stored in ``json`` columns.

    Non-ASCII text is stored as is, unless it holds something UTF-8 cannot
    encode (a lone surrogate), which is then escaped instead of failing.
    """
    text = _ENCODER.encode(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"))
    return text


@dataclass
class CachedLists:
    """What the latest stored checkpoint of a run holds, as this instance knows it."""

    ordinal: int
    checkpoint_id: str | None = None
    lists: dict[str, list[Any]] = field(default_factory=dict)
    # (field, key) -> the value stored in avo_checkpoint_parts
    parts: dict[tuple[str, str], Any] = field(default_factory=dict)
    # (field, key) -> a value known to be small enough to keep in the head
    inline: dict[tuple[str, str], Any] = field(default_factory=dict)


def _as_list(name: str, value: Any, previous: list[Any]) -> list[Any]:
    if name != _SET_FIELD:
        return list(value)  # a copy: the cache must not change with the caller's list
    # Keep the stored order for ids already there, append new ones sorted, so
    # a growing set is a pure append.
    current = value if isinstance(value, set | frozenset) else set(value)
    added = current.difference(previous)
    if len(current) - len(added) == len(previous):  # previous holds distinct ids: all kept
        return [*previous, *sorted(added)]
    kept = [item for item in previous if item in current]
    return kept + sorted(current.difference(kept))


def _first_difference(new: list[Any], old: list[Any]) -> int:
    shared = len(old)
    if len(new) >= shared:  # the usual case: compare old with new's prefix, one copy
        if new[:shared] == old:
            return shared
    else:
        shared = len(new)
        if new == old[:shared]:
            return shared
    for index in range(shared):
        if new[index] != old[index]:
            return index
    return shared


async def load_previous(conn: Any, run_id: str, ordinal: int) -> CachedLists:
    """Read what the run's latest checkpoint (ordinal ``ordinal``) holds."""
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
    for item in await conn.fetch(
        "SELECT field, position, value FROM avo_checkpoint_items WHERE run_id = $1 "
        "ORDER BY field, position",
        run_id,
    ):
        name = item["field"]
        if name in cached.lists and item["position"] < lengths.get(name, 0):
            cached.lists[name].append(json.loads(item["value"]))
    for part in await conn.fetch(
        "SELECT field, key, value FROM avo_checkpoint_parts WHERE run_id = $1", run_id
    ):
        cached.parts[(part["field"], part["key"])] = json.loads(part["value"])
    return cached


@dataclass
class CheckpointRows:
    """What saving one checkpoint writes: the head row and the changed items and parts."""

    ordinal: int
    checkpoint_id: str
    created_at: Any
    head: str
    lengths: str
    items: tuple[list[str], list[int], list[str]]  # field, position, JSON value
    trims: tuple[list[str], list[int]]  # field, first position to drop
    parts: tuple[list[str], list[str], list[str]]  # field, key, JSON value


def plan_checkpoint(
    checkpoint: Checkpoint, ordinal: int, previous: CachedLists
) -> tuple[CheckpointRows, CachedLists]:
    """The rows that store ``checkpoint`` as ``ordinal`` after ``previous``, and the new cache."""
    out = CachedLists(ordinal=ordinal, checkpoint_id=checkpoint.checkpoint_id)
    lengths: dict[str, int] = {}
    items: tuple[list[str], list[int], list[str]] = ([], [], [])
    trims: tuple[list[str], list[int]] = ([], [])
    for name in LIST_FIELDS:
        old = previous.lists.get(name, [])
        new = _as_list(name, getattr(checkpoint, name), old)
        start = _first_difference(new, old)
        for offset, item in enumerate(new[start:]):
            items[0].append(name)
            items[1].append(start + offset)
            items[2].append(dumps(item))
        if len(old) > len(new):
            trims[0].append(name)
            trims[1].append(len(new))
        out.lists[name] = new
        lengths[name] = len(new)
    parts: tuple[list[str], list[str], list[str]] = ([], [], [])
    references: dict[str, dict[str, list[Any]]] = {}
    for name in PART_FIELDS:
        encoded: dict[str, list[Any]] = {}
        for key, value in getattr(checkpoint, name).items():
            slot = (name, key)
            if slot in previous.parts and previous.parts[slot] == value:
                encoded[key] = ["r"]
                out.parts[slot] = value
                continue
            if slot in previous.inline and previous.inline[slot] == value:
                encoded[key] = ["i", value]  # small last time, unchanged: no need to measure
                out.inline[slot] = value
                continue
            text = dumps(value)
            if len(text) <= _INLINE_LIMIT:
                encoded[key] = ["i", value]
                out.inline[slot] = value
                continue
            parts[0].append(name)
            parts[1].append(key)
            parts[2].append(text)
            encoded[key] = ["r"]
            out.parts[slot] = value
        references[name] = encoded
    head = checkpoint.model_dump(mode="json", exclude={*LIST_FIELDS, *PART_FIELDS})
    head["parts"] = references
    rows = CheckpointRows(
        ordinal=ordinal,
        checkpoint_id=checkpoint.checkpoint_id,
        created_at=checkpoint.created_at,
        head=dumps(head),
        lengths=dumps(lengths),
        items=items,
        trims=trims,
        parts=parts,
    )
    return rows, out


async def read_latest(conn: Any, run_id: str) -> Checkpoint | None:
    """The full latest checkpoint of ``run_id``, or None when it has none."""
    row = await conn.fetchrow(
        "SELECT ordinal FROM avo_checkpoints WHERE run_id = $1 ORDER BY ordinal DESC LIMIT 1",
        run_id,
    )
    if row is None:
        return None
    previous = await load_previous(conn, run_id, row["ordinal"])
    head_text = await conn.fetchval(
        "SELECT head FROM avo_checkpoints WHERE run_id = $1 AND ordinal = $2",
        run_id,
        row["ordinal"],
    )
    data = json.loads(head_text)
    references: dict[str, dict[str, list[Any]]] = data.pop("parts")
    for name, encoded in references.items():
        data[name] = {
            key: ref[1] if ref[0] == "i" else previous.parts[(name, key)]
            for key, ref in encoded.items()
        }
    data.update(previous.lists)
    return Checkpoint.model_validate(data)
