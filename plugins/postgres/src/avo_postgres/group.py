"""Group writes: the batches of many runs in one statement, one round trip, one commit.

A worker serving many runs writes a batch per run per durable boundary; sent
one by one, each is a round trip and a commit, and on a busy machine the
socket sends alone cost more than the rest of a step. The group writer
collects the batches that arrive within one round of the event loop (while
another group is in flight, they wait for the next) and sends them as one
statement of fixed shape (so it is prepared once)::

    WITH w   AS (SELECT * FROM unnest(<one row per batch>)),
         upd AS (UPDATE avo_runs SET <each run's new summary and record> FROM w
                   WHERE run_id = w.run_id
                     AND last_sequence = w.expected        -- per run: nobody appended
                     AND <that run's lease check>          -- per run: fencing
                 RETURNING run_id),
         ev  AS (INSERT INTO avo_events ... WHERE run_id IN (SELECT run_id FROM upd)),
         ... checkpoint rows, likewise only for runs in upd ...
    SELECT array_agg(run_id) FROM upd

Each run's compare-and-set is its own: the rows of a run whose check fails
are not written, and that batch alone goes back to the store's single-write
path (reload, validate, retry). If the statement fails as a whole (a server
error), every batch of the group takes the single path, so a bad batch fails
alone there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from avo.events import AgentEvent
from avo.models import RunRecord
from avo.storage.leases import Lease
from avo.storage.text import record_json
from avo_postgres.checkpoints import CheckpointRows, dumps
from avo_postgres.writes import Head, tool_call_key

_GROUP_SQL = """
WITH w AS (
    SELECT * FROM unnest(
        $1::text[], $2::bigint[], $3::bool[], $4::bool[], $5::text[], $6::bool[],
        $7::bigint[], $8::bigint[], $9::text[], $10::text[], $11::timestamptz[],
        $12::text[], $13::bigint[], $14::text[]
    ) AS w(run_id, expected, log_created, log_terminal, log_state, model_responded,
           last_sequence, checkpoint_ordinal, checkpoint_id, state, updated_at,
           record, lease_token, lease_owner)
),
upd AS (
    UPDATE avo_runs AS r SET
        log_created = w.log_created, log_terminal = w.log_terminal,
        log_state = w.log_state, model_responded = w.model_responded,
        last_sequence = w.last_sequence, checkpoint_ordinal = w.checkpoint_ordinal,
        checkpoint_id = w.checkpoint_id, state = w.state, updated_at = w.updated_at,
        record = w.record::json
    FROM w
    WHERE r.run_id = w.run_id AND r.last_sequence = w.expected
      AND CASE WHEN w.lease_token IS NULL
               THEN coalesce(r.lease_expires_at <= clock_timestamp(), true)
               ELSE r.lease_token = w.lease_token AND r.lease_owner = w.lease_owner END
    RETURNING r.run_id
),
ev AS (
    INSERT INTO avo_events (run_id, sequence, event_id, event_type, created_at, payload,
                            parent_event_id, tool_call_id)
    SELECT e.run_id, e.seq, e.id, e.kind, e.at, e.payload::json, e.parent, e.call
    FROM unnest($15::text[], $16::bigint[], $17::text[], $18::text[], $19::timestamptz[],
                $20::text[], $21::text[], $22::text[])
         AS e(run_id, seq, id, kind, at, payload, parent, call)
    WHERE e.run_id IN (SELECT run_id FROM upd)
),
ck_items AS (
    INSERT INTO avo_checkpoint_items (run_id, field, position, value)
    SELECT u.run_id, u.f, u.p, u.v::json
    FROM unnest($23::text[], $24::text[], $25::int[], $26::text[]) AS u(run_id, f, p, v)
    WHERE u.run_id IN (SELECT run_id FROM upd)
    ON CONFLICT (run_id, field, position) DO UPDATE SET value = EXCLUDED.value
),
ck_trims AS (
    DELETE FROM avo_checkpoint_items AS i
    USING unnest($27::text[], $28::text[], $29::int[]) AS t(run_id, f, p)
    WHERE t.run_id IN (SELECT run_id FROM upd)
      AND i.run_id = t.run_id AND i.field = t.f AND i.position >= t.p
),
ck_parts AS (
    INSERT INTO avo_checkpoint_parts (run_id, field, key, value)
    SELECT u.run_id, u.f, u.k, u.v::json
    FROM unnest($30::text[], $31::text[], $32::text[], $33::text[]) AS u(run_id, f, k, v)
    WHERE u.run_id IN (SELECT run_id FROM upd)
    ON CONFLICT (run_id, field, key) DO UPDATE SET value = EXCLUDED.value
),
ck_head AS (
    INSERT INTO avo_checkpoints (run_id, ordinal, checkpoint_id, created_at, head, lengths)
    SELECT h.run_id, h.ordinal, h.id, h.at, h.head::json, h.lengths::json
    FROM unnest($34::text[], $35::bigint[], $36::text[], $37::timestamptz[], $38::text[],
                $39::text[]) AS h(run_id, ordinal, id, at, head, lengths)
    WHERE h.run_id IN (SELECT run_id FROM upd)
)
SELECT coalesce(array_agg(run_id), '{}') FROM upd
"""


@dataclass
class GroupItem:
    """One run's staged batch: its head (events applied), lease, rows, and the answer."""

    head: Head
    lease: Lease | None
    events: list[AgentEvent]
    run: RunRecord
    checkpoint: CheckpointRows | None
    applied: asyncio.Future[bool] | None = field(default=None, repr=False)


def group_args(items: list[GroupItem]) -> list[Any]:
    """The 39 arrays of :data:`_GROUP_SQL` for ``items`` (one batch per run)."""
    cols: list[list[Any]] = [[] for _ in range(39)]
    for item in items:
        log, head, run = item.head.log, item.head, item.run
        run_id = log.run_id
        for index, value in enumerate(
            (
                run_id,
                head.expected,
                log.created,
                log.terminal,
                log.state.value,
                log.model_responded,
                log.last_sequence,
                head.checkpoint_ordinal,
                head.checkpoint_id,
                run.state.value,
                run.updated_at,
                record_json(run),
                None if item.lease is None else item.lease.token,
                None if item.lease is None else item.lease.owner,
            )
        ):
            cols[index].append(value)
        for event in item.events:
            cols[14].append(run_id)
            cols[15].append(event.sequence)
            cols[16].append(event.event_id)
            cols[17].append(event.event_type.value)
            cols[18].append(event.created_at)
            cols[19].append(dumps(event.payload))
            cols[20].append(event.parent_event_id)
            cols[21].append(tool_call_key(event))
        rows = item.checkpoint
        if rows is None:
            continue
        fields, positions, values = rows.items
        cols[22] += [run_id] * len(fields)
        cols[23] += fields
        cols[24] += positions
        cols[25] += values
        trim_fields, trim_from = rows.trims
        cols[26] += [run_id] * len(trim_fields)
        cols[27] += trim_fields
        cols[28] += trim_from
        part_fields, part_keys, part_values = rows.parts
        cols[29] += [run_id] * len(part_fields)
        cols[30] += part_fields
        cols[31] += part_keys
        cols[32] += part_values
        for index, value in enumerate(
            (run_id, rows.ordinal, rows.checkpoint_id, rows.created_at, rows.head, rows.lengths),
            start=33,
        ):
            cols[index].append(value)
    return cols


Send = Callable[[str, list[Any]], Awaitable[list[str]]]


class GroupWriter:
    """Collects batches of different runs and sends each round's as one statement.

    ``send(sql, args)`` runs the statement on a pooled connection and returns
    the run ids it applied. Up to ``parallel`` statements are in flight at once
    (on as many connections); batches that arrive meanwhile form the next group.
    """

    def __init__(self, send: Send, *, parallel: int = 2) -> None:
        self._send = send
        self.parallel = max(1, parallel)
        self._pending: list[GroupItem] = []
        self._scheduled = False
        self._in_flight = 0
        self.groups = 0  # statements sent (for tests and benchmarks)

    async def submit(self, item: GroupItem) -> bool:
        """Queue ``item``; True once its rows are stored, False if its run's check failed."""
        loop = asyncio.get_running_loop()
        item.applied = loop.create_future()
        self._pending.append(item)
        self._schedule(loop)
        return await asyncio.shield(item.applied)

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._scheduled and self._in_flight < self.parallel and self._pending:
            self._scheduled = True
            loop.call_soon(self._launch)  # after the rest of this round's writers

    def _launch(self) -> None:
        self._scheduled = False
        if not self._pending or self._in_flight >= self.parallel:
            return
        # One batch per run per statement: a second one of a run (its writer was
        # cancelled while the first waited) goes with the next group.
        items: list[GroupItem] = []
        later: list[GroupItem] = []
        seen: set[str] = set()
        for item in self._pending:
            run_id = item.head.log.run_id
            (later if run_id in seen else items).append(item)
            seen.add(run_id)
        self._pending = later
        self._in_flight += 1
        asyncio.get_running_loop().create_task(self._flush(items))

    async def _flush(self, items: list[GroupItem]) -> None:
        items.sort(key=lambda item: item.head.log.run_id)  # one lock order across writers
        applied: set[str] = set()
        try:
            applied = set(await self._send(_GROUP_SQL, group_args(items)))
            self.groups += 1
        except Exception:
            applied = set()
        finally:
            self._in_flight -= 1
            for item in items:
                assert item.applied is not None
                if not item.applied.done():
                    item.applied.set_result(item.head.log.run_id in applied)
            self._schedule(asyncio.get_running_loop())


__all__ = ["GroupItem", "GroupWriter", "group_args"]
