"""One write = one SQL statement: a compare-and-set on the run row, then the rows it guards.

A store instance keeps, per run it writes, the run's *head*: the log summary
(:class:`avo.events.RunLogState`) and checkpoint position as of the run's
``last_sequence``. A write validates its events against that head with
:func:`avo.events.validate_event_append`, then sends one statement::

    WITH upd AS (UPDATE avo_runs SET <new summary> WHERE run_id = $run
                   AND last_sequence = <head's>          -- nobody appended since
                   AND <the writer's lease is current>   -- fencing token / no live lease
                 RETURNING run_id),
         ev  AS (INSERT INTO avo_events ... FROM upd, unnest(<events>)),
         ... checkpoint head, items and parts, also FROM upd ...
    SELECT count(*) FROM upd

PostgreSQL re-checks the ``WHERE`` against the newest row version after any
concurrent writer commits, so either the run still ends at the head's
sequence and everything is written atomically with the next sequences, or
nothing is written at all. On a miss the store reloads the head from the
database (diagnosing a lease refusal), re-validates and tries again. So the
invariants are enforced against the database's current state, sequences are
gapless and unique (``PRIMARY KEY (run_id, sequence)`` backs that up), and an
uncontended append costs one round trip.

Tool-result checks need to know whether that call started and
already has a result. A head built by ``create_run`` in this instance knows
every call; a head loaded from the database looks the one call up through a
partial index. Both are as of the head's sequence, which the compare-and-set
confirms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from avo.events import AgentEvent, EventType, RunLogState
from avo.exceptions import LeaseError, RunNotFoundError, StorageError
from avo.models import RunRecord
from avo.state import RunState
from avo.storage.leases import Lease
from avo.storage.text import escape_surrogates, record_json
from avo_postgres.checkpoints import CheckpointRows, dumps

HEAD_SQL = (
    "SELECT log_created, log_terminal, log_state, model_responded, last_sequence, "
    "checkpoint_ordinal, checkpoint_id, lease_owner, lease_token, "
    "coalesce(lease_expires_at > clock_timestamp(), false) AS lease_live "
    "FROM avo_runs WHERE run_id = $1"
)

_TOOL_CALL_SQL = (
    "SELECT event_type FROM avo_events WHERE run_id = $1 AND tool_call_id = $2 "
    "AND event_type IN ('tool_started', 'tool_completed', 'tool_failed', "
    "'human_input_requested', 'human_input_received') ORDER BY sequence"
)
# Events whose tool_call_id is a column: tool starts and results, and a call's request
# for a person and its answer (an answer needs an open request: invariant lookups).
_TOOL_EVENTS = frozenset(
    {
        EventType.TOOL_STARTED,
        EventType.TOOL_COMPLETED,
        EventType.TOOL_FAILED,
        EventType.HUMAN_INPUT_REQUESTED,
        EventType.HUMAN_INPUT_RECEIVED,
    }
)
_LOOKED_UP = frozenset(
    {
        EventType.TOOL_COMPLETED,
        EventType.TOOL_FAILED,
        EventType.HUMAN_INPUT_REQUESTED,
        EventType.HUMAN_INPUT_RECEIVED,
    }
)


def tool_call_key(event: AgentEvent) -> str | None:
    """The ``tool_call_id`` column of a tool event (None for other events).

    PostgreSQL text cannot hold NUL or a lone surrogate, so they are stored escaped
    (it is a lookup key: the payload keeps the exact id).
    """
    if event.event_type not in _TOOL_EVENTS:
        return None
    call_id = event.payload.get("tool_call_id")
    if not isinstance(call_id, str):
        return None
    return escape_surrogates(call_id).replace("\x00", "\\u0000")


@dataclass
class Head:
    """What a store instance knows about a run as of ``log.last_sequence``."""

    log: RunLogState
    checkpoint_ordinal: int = 0
    checkpoint_id: str | None = None
    complete: bool = False  # True: the tool-call sets hold every call of the run
    known: set[str] = field(default_factory=set)  # calls whose status was looked up
    expected: int = 0  # the sequence the run must still end at for the write to apply

    def freeze(self) -> None:
        """Base the coming write on the head's current sequence."""
        self.expected = self.log.last_sequence


def lease_refusal(run_id: str, row: Any, lease: Lease | None) -> LeaseError | None:
    """The LeaseError a writer holding ``lease`` (None: no lease) gets on this run row.

    A lease writes while its token is the run's newest and its owner still
    holds it (after release_lease it writes no more).
    """
    if lease is not None:
        if row["lease_token"] != lease.token:
            holder = "nobody" if row["lease_owner"] is None else repr(row["lease_owner"])
            return LeaseError(
                f"lease token {lease.token} of run {run_id} is stale: the run's newest token "
                f"is {row['lease_token']} (held by {holder}); nothing was written. Stop "
                "driving this run",
                run_id=run_id,
            )
        if row["lease_owner"] != lease.owner:
            return LeaseError(
                f"lease token {lease.token} of run {run_id} was released by {lease.owner!r}; "
                "nothing was written. Acquire the lease again to write",
                run_id=run_id,
            )
        return None
    if row["lease_live"]:
        return LeaseError(
            f"run {run_id} is leased by {row['lease_owner']!r} (token {row['lease_token']}); "
            "this write holds no lease, so nothing was written. Write through "
            "store.fenced(lease) after acquire_lease(), or wait for the lease to be released",
            run_id=run_id,
        )
    return None


async def load_head(conn: Any, run_id: str, lease: Lease | None) -> Head:
    """Read the run's head from the database; RunNotFoundError / LeaseError when refused."""
    row = await conn.fetchrow(HEAD_SQL, run_id)
    if row is None:
        raise RunNotFoundError(f"run {run_id} does not exist", run_id=run_id)
    refusal = lease_refusal(run_id, row, lease)
    if refusal is not None:
        raise refusal
    log = RunLogState(
        run_id=run_id,
        created=row["log_created"],
        terminal=row["log_terminal"],
        state=RunState(row["log_state"]),
        model_responded=row["model_responded"],
        last_sequence=row["last_sequence"],
    )
    return Head(
        log=log, checkpoint_ordinal=row["checkpoint_ordinal"], checkpoint_id=row["checkpoint_id"]
    )


def needs_lookup(head: Head, event: AgentEvent) -> bool:
    """Whether validating ``event`` needs :func:`learn_tool_call` to ask the database."""
    if head.complete or event.event_type not in _LOOKED_UP:
        return False
    call_id = event.payload.get("tool_call_id")
    return isinstance(call_id, str) and call_id not in head.known


async def learn_tool_call(conn: Any, head: Head, event: AgentEvent) -> None:
    """Make sure the head knows whether ``event``'s tool call started / has a result,
    and whether it asked a person / was answered."""
    if head.complete or event.event_type not in _LOOKED_UP:
        return
    call_id = event.payload.get("tool_call_id")
    if not isinstance(call_id, str) or call_id in head.known:
        return
    log = head.log
    for row in await conn.fetch(_TOOL_CALL_SQL, log.run_id, tool_call_key(event)):
        kind = row["event_type"]
        if kind == EventType.TOOL_STARTED.value:
            log.started_tool_calls.add(call_id)
        elif kind == EventType.HUMAN_INPUT_REQUESTED.value:  # asked again once answered
            log.requested_inputs.add(call_id)
            log.answered_inputs.discard(call_id)
        elif kind == EventType.HUMAN_INPUT_RECEIVED.value:
            log.answered_inputs.add(call_id)
        else:
            log.finished_tool_calls.add(call_id)
    head.known.add(call_id)


class _Params:
    def __init__(self) -> None:
        self.args: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.args.append(value)
        return f"${len(self.args)}"


def build_write(
    head: Head,
    lease: Lease | None,
    events: list[AgentEvent],
    run: RunRecord | None,
    checkpoint: CheckpointRows | None,
    *,
    check_sequence: bool = True,
) -> tuple[str, list[Any]]:
    """The one statement that writes ``events`` (+ run record, + checkpoint) after ``head``.

    ``head`` already has the events applied; ``head.expected`` is the sequence
    the run must still end at. A bare record update (``check_sequence=False``,
    no events) writes only the record, guarded only by the lease.
    """
    p = _Params()
    log = head.log
    run_id = p(log.run_id)
    sets: list[str] = []
    if check_sequence:  # the summary moves with the events (a bare record update keeps it)
        sets += [
            f"log_created = {p(log.created)}",
            f"log_terminal = {p(log.terminal)}",
            f"log_state = {p(log.state.value)}",
            f"model_responded = {p(log.model_responded)}",
            f"last_sequence = {p(log.last_sequence)}",
            f"checkpoint_ordinal = {p(head.checkpoint_ordinal)}",
            f"checkpoint_id = {p(head.checkpoint_id)}",
        ]
    if run is not None:
        sets += [
            f"state = {p(run.state.value)}",
            f"updated_at = {p(run.updated_at)}",
            f"record = {p(record_json(run))}::json",
        ]
    where = [f"run_id = {run_id}"]
    if lease is None:  # unfenced: nobody may hold a live lease
        where.append("coalesce(lease_expires_at <= clock_timestamp(), true)")
    else:  # fenced: the lease's token is the newest and its owner still holds it
        where.append(f"lease_token = {p(lease.token)} AND lease_owner = {p(lease.owner)}")
    if check_sequence:
        where.append(f"last_sequence = {p(head.expected)}")
    ctes = [
        f"upd AS (UPDATE avo_runs SET {', '.join(sets)} WHERE {' AND '.join(where)} "
        "RETURNING run_id)"
    ]
    if events:
        ctes.append(
            "ev AS (INSERT INTO avo_events (run_id, sequence, event_id, event_type, created_at, "
            "payload, parent_event_id, tool_call_id) SELECT upd.run_id, e.seq, e.id, e.kind, "
            "e.at, e.payload::json, e.parent, e.call FROM upd, unnest("
            f"{p([e.sequence for e in events])}::bigint[], "
            f"{p([e.event_id for e in events])}::text[], "
            f"{p([e.event_type.value for e in events])}::text[], "
            f"{p([e.created_at for e in events])}::timestamptz[], "
            f"{p([dumps(e.payload) for e in events])}::text[], "
            f"{p([e.parent_event_id for e in events])}::text[], "
            f"{p([tool_call_key(e) for e in events])}::text[]"
            ") AS e(seq, id, kind, at, payload, parent, call))"
        )
    if checkpoint is not None:
        ctes += _checkpoint_ctes(p, checkpoint)
    return f"WITH {', '.join(ctes)} SELECT count(*) FROM upd", p.args


def _checkpoint_ctes(p: _Params, rows: CheckpointRows) -> list[str]:
    fields, positions, values = rows.items
    trim_fields, trim_from = rows.trims
    part_fields, part_keys, part_values = rows.parts
    return [
        "ck_items AS (INSERT INTO avo_checkpoint_items (run_id, field, position, value) "
        "SELECT upd.run_id, u.f, u.p, u.v::json FROM upd, unnest("
        f"{p(fields)}::text[], {p(positions)}::int[], {p(values)}::text[]) AS u(f, p, v) "
        "ON CONFLICT (run_id, field, position) DO UPDATE SET value = EXCLUDED.value)",
        "ck_trims AS (DELETE FROM avo_checkpoint_items AS i USING upd, unnest("
        f"{p(trim_fields)}::text[], {p(trim_from)}::int[]) AS t(f, p) "
        "WHERE i.run_id = upd.run_id AND i.field = t.f AND i.position >= t.p)",
        "ck_parts AS (INSERT INTO avo_checkpoint_parts (run_id, field, key, value) "
        "SELECT upd.run_id, u.f, u.k, u.v::json FROM upd, unnest("
        f"{p(part_fields)}::text[], {p(part_keys)}::text[], {p(part_values)}::text[]) "
        "AS u(f, k, v) ON CONFLICT (run_id, field, key) DO UPDATE SET value = EXCLUDED.value)",
        "ck_head AS (INSERT INTO avo_checkpoints (run_id, ordinal, checkpoint_id, created_at, "
        f"head, lengths) SELECT upd.run_id, {p(rows.ordinal)}, {p(rows.checkpoint_id)}, "
        f"{p(rows.created_at)}, {p(rows.head)}::json, {p(rows.lengths)}::json FROM upd)",
    ]


async def insert_run(conn: Any, run: RunRecord, created: AgentEvent, lease: Lease | None) -> None:
    """In create_run's transaction: insert the run row and its RUN_CREATED event (sequence 1).

    StorageError when the run exists; LeaseError when a lease taken before the
    run existed forbids this creator (see :mod:`avo_postgres.leases`).
    """
    from avo_postgres import leases

    await leases.lock_run_leases(conn, run.run_id)
    inserted = await conn.fetchval(
        "INSERT INTO avo_runs (run_id, state, created_at, updated_at, record, "
        "log_created, log_state, last_sequence) "
        "VALUES ($1, $2, $3, $4, $5::json, true, $6, 1) "
        "ON CONFLICT (run_id) DO NOTHING RETURNING true",
        run.run_id,
        run.state.value,
        run.created_at,
        run.updated_at,
        record_json(run),
        RunState.CREATED.value,
    )
    if not inserted:
        raise StorageError(
            f"run {run.run_id} already exists; a run is created once, with a fresh id"
        )
    await leases.adopt_pending_lease(conn, run.run_id, lease)
    await conn.execute(
        "INSERT INTO avo_events (run_id, sequence, event_id, event_type, created_at, "
        "payload, parent_event_id) VALUES ($1, 1, $2, $3, $4, $5::json, $6)",
        run.run_id,
        created.event_id,
        created.event_type.value,
        created.created_at,
        dumps(created.payload),
        created.parent_event_id,
    )
