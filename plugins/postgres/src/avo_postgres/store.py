"""PostgresEventStore: the §11.1 EventStore on PostgreSQL, shared by many processes.

Every write is one transaction that first locks the run's row
(``SELECT ... FOR UPDATE``). Under that lock the store reads the run's log
summary (the ``RunLogState`` columns on the row), checks the §6 invariants with
:func:`avo.events.validate_event_append` against the database's current state,
checks the writer's lease, assigns the next sequence number, inserts the event
(``PRIMARY KEY (run_id, sequence)`` backs the no-duplicate guarantee) and
updates the summary. Writers to one run therefore queue on the row lock and see
each other's events; writers to different runs never wait for each other.
Each append costs O(1) however long the run is.

One writer per run: :meth:`PostgresEventStore.acquire_lease` grants a lease
with a fencing token (a per-run counter that only grows) and
:meth:`PostgresEventStore.fenced` gives a view whose writes carry it; a write
whose token is not the run's newest is refused with
:class:`avo.exceptions.LeaseError` inside the same transaction and writes
nothing (see :mod:`avo_postgres.leases`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from types import TracebackType
from typing import Any

from avo.events import (
    TERMINAL_EVENT_TYPES,
    AgentEvent,
    EventType,
    RunLogState,
    validate_event_append,
)
from avo.exceptions import EventInvariantError, LeaseError, RunNotFoundError, StorageError
from avo.models import Checkpoint, RunRecord
from avo.state import RunState, is_terminal
from avo.storage.leases import Lease
from avo_postgres import leases
from avo_postgres.checkpoints import (
    CachedLists,
    dumps,
    load_previous,
    read_latest,
    write_checkpoint,
)
from avo_postgres.connection import (
    DEFAULT_CONNECT_TIMEOUT,
    open_pool,
    parse_dsn,
    redact_dsn,
    storage_errors,
)
from avo_postgres.leases import FencedPostgresStore
from avo_postgres.schema import migrate

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_TOOL_RESULT_TYPES = (EventType.TOOL_COMPLETED, EventType.TOOL_FAILED)

_LOCK_RUN = (
    "SELECT log_created, log_terminal, log_state, model_responded, last_sequence, "
    "checkpoint_ordinal, checkpoint_id FROM avo_runs WHERE run_id = $1 FOR UPDATE"
)


class _Writer:
    """What one locked write transaction knows about its run."""

    def __init__(self, run_id: str, row: Any) -> None:
        self.run_id = run_id
        self.log = RunLogState(
            run_id=run_id,
            created=row["log_created"],
            terminal=row["log_terminal"],
            state=RunState(row["log_state"]),
            model_responded=row["model_responded"],
            last_sequence=row["last_sequence"],
        )
        self.checkpoint_ordinal: int = row["checkpoint_ordinal"]
        self.checkpoint_id: str | None = row["checkpoint_id"]
        self.pending: list[AgentEvent] = []


class PostgresEventStore:
    """The §11.1 EventStore protocol on PostgreSQL (asyncpg), safe for many writers.

    ``dsn`` is a ``postgresql://user[:password]@host[:port]/database`` URL. The
    pool opens on first use (or ``async with``), applying schema migrations.
    ``schema`` keeps the store's tables in that PostgreSQL schema (created when
    missing) so several stores can share one database.
    """

    def __init__(
        self,
        dsn: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        command_timeout: float | None = 60.0,
        pool_min_size: int = 1,
        pool_max_size: int = 5,
        schema: str | None = None,
    ) -> None:
        if schema is not None and not _IDENTIFIER.fullmatch(schema):
            raise StorageError(
                f"postgres store schema {schema!r} is not a plain identifier; use lower-case "
                "letters, digits and underscores, starting with a letter or underscore"
            )
        self._schema = schema
        self._dsn = dsn
        self._address = parse_dsn(dsn)
        self._connect_timeout = connect_timeout
        self._command_timeout = command_timeout
        self._pool_min_size = pool_min_size
        self._pool_max_size = pool_max_size
        self._pool: Any = None
        self._opening = asyncio.Lock()
        self._closed = False
        self._checkpoint_cache: dict[str, CachedLists] = {}

    def __repr__(self) -> str:
        return f"PostgresEventStore({redact_dsn(self._dsn)!r})"

    # ------------------------------------------------------------ lifecycle
    async def connect(self) -> None:
        """Open the pool and apply pending migrations (done on first use otherwise)."""
        await self._ensure_pool()

    async def _ensure_pool(self) -> Any:
        if self._pool is not None:
            return self._pool
        async with self._opening:  # concurrent first uses open one pool
            return await self._open_pool()

    async def _open_pool(self) -> Any:
        if self._closed:
            raise StorageError(f"{self!r} is closed")
        if self._pool is None:
            pool = await open_pool(
                self._dsn,
                self._address,
                connect_timeout=self._connect_timeout,
                min_size=self._pool_min_size,
                max_size=self._pool_max_size,
                command_timeout=self._command_timeout,
                schema=self._schema,
            )
            try:
                async with (
                    storage_errors(self._address, "applying schema migrations"),
                    pool.acquire() as conn,
                ):
                    await migrate(conn, str(self._address), self._schema)
            except BaseException:
                await pool.close()
                raise
            self._pool = pool
        return self._pool

    @asynccontextmanager
    async def _connection(self, action: str) -> AsyncIterator[Any]:
        """A pooled connection; driver errors while ``action`` become StorageError."""
        pool = await self._ensure_pool()
        async with storage_errors(self._address, action), pool.acquire() as conn:
            yield conn

    @asynccontextmanager
    async def _transaction(self, action: str, isolation: str | None = None) -> AsyncIterator[Any]:
        """A connection inside one transaction, committed when the block succeeds."""
        async with self._connection(action) as conn, conn.transaction(isolation=isolation):
            yield conn

    async def close(self) -> None:
        """Close the connection pool. Safe to call twice."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> PostgresEventStore:
        await self._ensure_pool()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ------------------------------------------------------------ write paths
    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        """Insert the run and its RUN_CREATED event (sequence 1) in one transaction."""
        return await self._create_run(run, event, token=None)

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        """Append one event; the store assigns its sequence."""
        return await self._append(event, None, token=None)

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        """Append ``event`` and store ``run`` atomically."""
        return await self._append_and_update(event, run, token=None)

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        """Append the CHECKPOINT_CREATED event and store the checkpoint (a delta), atomically."""
        return await self._save_checkpoint(checkpoint, event, token=None)

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        """Append the final STATE_CHANGED and the terminal event and store ``run``, atomically.

        Of two writers racing to finalize one run exactly one wins; the other
        gets EventInvariantError (nothing may follow a terminal event).
        """
        return await self._finalize(run, state_event, terminal_event, token=None)

    async def update_run(self, run: RunRecord) -> RunRecord:
        """Store ``run``'s record; RunNotFoundError when it does not exist."""
        return await self._update_run(run, token=None)

    async def delete_run(self, run_id: str) -> bool:
        """Delete a finished run with its events, checkpoints and lease, in one transaction.

        Returns False when the run does not exist; refuses (StorageError) a
        run that is not terminal.
        """
        async with self._transaction(f"deleting run {run_id}") as conn:
            row = await conn.fetchrow(
                "SELECT log_terminal, state FROM avo_runs WHERE run_id = $1 FOR UPDATE", run_id
            )
            if row is None:
                return False
            if not _terminal(row):
                raise StorageError(
                    f"run {run_id} is not finished; only terminal runs can be deleted"
                )
            await conn.execute("DELETE FROM avo_runs WHERE run_id = $1", run_id)
            await conn.execute("DELETE FROM avo_leases WHERE run_id = $1", run_id)
        self._checkpoint_cache.pop(run_id, None)
        return True

    # The implementations; ``token`` is the fencing token of a fenced() view.
    async def _create_run(
        self, run: RunRecord, event: AgentEvent, *, token: int | None
    ) -> RunRecord:
        _same_run(run, event)
        validate_event_append(RunLogState(run_id=run.run_id), event)
        async with self._transaction(f"creating run {run.run_id}") as conn:
            inserted = await conn.fetchval(
                "INSERT INTO avo_runs (run_id, state, created_at, updated_at, record) "
                "VALUES ($1, $2, $3, $4, $5::json) ON CONFLICT (run_id) DO NOTHING "
                "RETURNING true",
                run.run_id,
                run.state.value,
                run.created_at,
                run.updated_at,
                run.model_dump_json(),
            )
            if not inserted:
                raise StorageError(
                    f"run {run.run_id} already exists; a run is created once, with a fresh id"
                )
            writer = await self._lock(conn, run.run_id, token)
            await self._insert_event(conn, writer, event)
            await self._save_summary(conn, writer, run=None)
        return run

    async def _append(
        self, event: AgentEvent, run: RunRecord | None, *, token: int | None
    ) -> AgentEvent:
        run_id = event.run_id
        async with self._transaction(f"appending an event to run {run_id}") as conn:
            writer = await self._lock(conn, run_id, token)
            stored = await self._insert_event(conn, writer, event)
            await self._save_summary(conn, writer, run=run)
        return stored

    async def _append_and_update(
        self, event: AgentEvent, run: RunRecord, *, token: int | None
    ) -> tuple[AgentEvent, RunRecord]:
        _same_run(run, event)
        return await self._append(event, run, token=token), run

    async def _finalize(
        self,
        run: RunRecord,
        state_event: AgentEvent,
        terminal_event: AgentEvent,
        *,
        token: int | None,
    ) -> tuple[AgentEvent, AgentEvent]:
        _same_run(run, state_event)
        _same_run(run, terminal_event)
        if terminal_event.event_type not in TERMINAL_EVENT_TYPES:
            raise EventInvariantError(
                f"run {run.run_id}: finalize_run needs a terminal event, got "
                f"{terminal_event.event_type.value}",
                run_id=run.run_id,
            )
        async with self._transaction(f"finalizing run {run.run_id}") as conn:
            writer = await self._lock(conn, run.run_id, token)
            first = await self._insert_event(conn, writer, state_event)
            second = await self._insert_event(conn, writer, terminal_event)
            await self._save_summary(conn, writer, run=run)
        return first, second

    async def _save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent, *, token: int | None
    ) -> tuple[Checkpoint, AgentEvent]:
        if checkpoint.run_id != event.run_id:
            raise StorageError(
                f"checkpoint is for run {checkpoint.run_id} but its event is for run "
                f"{event.run_id}; pass the CHECKPOINT_CREATED event of the same run"
            )
        run_id = checkpoint.run_id
        async with self._transaction(f"saving a checkpoint of run {run_id}") as conn:
            writer = await self._lock(conn, run_id, token)
            stored_event = await self._insert_event(conn, writer, event)
            previous = self._checkpoint_cache.get(run_id)
            if previous is None or (previous.ordinal, previous.checkpoint_id) != (
                writer.checkpoint_ordinal,
                writer.checkpoint_id,
            ):  # another writer checkpointed since (or the cache is cold): read them back
                previous = await load_previous(conn, run_id, writer.checkpoint_ordinal)
            writer.checkpoint_ordinal += 1
            writer.checkpoint_id = checkpoint.checkpoint_id
            cached = await write_checkpoint(conn, checkpoint, writer.checkpoint_ordinal, previous)
            await self._save_summary(conn, writer, run=None)
        self._checkpoint_cache[run_id] = cached
        return checkpoint, stored_event

    async def _update_run(self, run: RunRecord, *, token: int | None) -> RunRecord:
        async with self._transaction(f"updating run {run.run_id}") as conn:
            writer = await self._lock(conn, run.run_id, token)
            await self._save_summary(conn, writer, run=run)
        return run

    async def _lock(self, conn: Any, run_id: str, token: int | None) -> _Writer:
        """Lock the run row, check the writer's lease, and load the log summary."""
        row = await conn.fetchrow(_LOCK_RUN, run_id)
        if row is None:
            raise RunNotFoundError(f"run {run_id} does not exist", run_id=run_id)
        await leases.check_write(conn, run_id, token)
        return _Writer(run_id, row)

    async def _insert_event(self, conn: Any, writer: _Writer, event: AgentEvent) -> AgentEvent:
        """Validate ``event`` against the locked log and stage it with the next sequence.

        Staged events are written by :meth:`_save_summary`, in the same statement
        as the summary update (one round trip for the common single append).
        """
        log = writer.log
        if event.event_type in _TOOL_RESULT_TYPES:
            await self._load_tool_call(conn, writer, event)
        validate_event_append(log, event)
        stored = event.model_copy(update={"sequence": log.last_sequence + 1})
        log.apply(stored)
        writer.pending.append(stored)
        return stored

    async def _load_tool_call(self, conn: Any, writer: _Writer, event: AgentEvent) -> None:
        """Tell the summary whether this event's tool call started / has a result."""
        call_id = event.payload.get("tool_call_id")
        if not isinstance(call_id, str):
            return
        kinds = await conn.fetch(
            "SELECT event_type FROM avo_events WHERE run_id = $1 "
            "AND payload ->> 'tool_call_id' = $2 "
            "AND event_type IN ('tool_started', 'tool_completed', 'tool_failed')",
            writer.run_id,
            call_id,
        )
        for row in kinds:
            if row["event_type"] == EventType.TOOL_STARTED.value:
                writer.log.started_tool_calls.add(call_id)
            else:
                writer.log.finished_tool_calls.add(call_id)

    async def _save_summary(self, conn: Any, writer: _Writer, *, run: RunRecord | None) -> None:
        """Write the staged events, the log summary and (when given) the run record."""
        log = writer.log
        args: list[Any] = [
            writer.run_id,
            log.created,
            log.terminal,
            log.state.value,
            log.model_responded,
            log.last_sequence,
            writer.checkpoint_ordinal,
            writer.checkpoint_id,
        ]
        sets = (
            "log_created = $2, log_terminal = $3, log_state = $4, model_responded = $5, "
            "last_sequence = $6, checkpoint_ordinal = $7, checkpoint_id = $8"
        )
        if run is not None:
            if run.run_id != writer.run_id:
                raise StorageError(f"run record {run.run_id} does not match run {writer.run_id}")
            n = len(args)
            sets += f", state = ${n + 1}, updated_at = ${n + 2}, record = ${n + 3}::json"
            args += [run.state.value, run.updated_at, run.model_dump_json()]
        prefix = ""
        if writer.pending:
            n = len(args)
            prefix = (
                "WITH staged AS (INSERT INTO avo_events (run_id, sequence, event_id, event_type, "
                "created_at, payload, parent_event_id) SELECT $1, e.seq, e.id, e.kind, e.at, "
                "e.payload::json, e.parent FROM unnest("
                f"${n + 1}::bigint[], ${n + 2}::text[], ${n + 3}::text[], "
                f"${n + 4}::timestamptz[], ${n + 5}::text[], ${n + 6}::text[]"
                ") AS e(seq, id, kind, at, payload, parent)) "
            )
            events = writer.pending
            args += [
                [e.sequence for e in events],
                [e.event_id for e in events],
                [e.event_type.value for e in events],
                [e.created_at for e in events],
                [dumps(e.payload) for e in events],
                [e.parent_event_id for e in events],
            ]
            writer.pending = []
        await conn.execute(f"{prefix}UPDATE avo_runs SET {sets} WHERE run_id = $1", *args)

    # ------------------------------------------------------------ leases
    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> Lease:
        """Take the run's writer lease for ``ttl`` seconds (the run need not exist yet).

        Refused with LeaseError while another owner holds a live lease. The new
        token is newer than every earlier one, so whoever held the run before
        is fenced off. Write through :meth:`fenced` with the returned lease.
        """
        if not owner:
            raise LeaseError("acquire_lease needs a non-empty owner name", run_id=run_id)
        seconds = leases.check_ttl(ttl)
        async with self._transaction(f"acquiring the lease of run {run_id}") as conn:
            return await leases.acquire(conn, run_id, owner, seconds)

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend ``lease`` by ``ttl`` seconds from now; LeaseError if it was fenced off."""
        seconds = leases.check_ttl(ttl)
        async with self._transaction(f"renewing the lease of run {lease.run_id}") as conn:
            return await leases.renew(conn, lease, seconds)

    async def release_lease(self, lease: Lease) -> None:
        """Give the lease up so another owner can take the run at once."""
        async with self._connection(f"releasing the lease of run {lease.run_id}") as conn:
            await leases.release(conn, lease)

    def fenced(self, lease: Lease) -> FencedPostgresStore:
        """An EventStore view whose writes to ``lease.run_id`` carry the lease's token."""
        return FencedPostgresStore(self, lease)

    # ------------------------------------------------------------ reads
    async def get_run(self, run_id: str) -> RunRecord | None:
        """The stored run record, or None."""
        async with self._connection(f"reading run {run_id}") as conn:
            text = await conn.fetchval("SELECT record FROM avo_runs WHERE run_id = $1", run_id)
        return None if text is None else _record(text)

    async def list_runs(self) -> list[RunRecord]:
        """Every run, newest first."""
        async with self._connection("listing runs") as conn:
            rows = await conn.fetch(
                "SELECT record FROM avo_runs ORDER BY created_at DESC, insert_order DESC"
            )
        return [_record(row["record"]) for row in rows]

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        """The run's events in ascending sequence ([] for an unknown run)."""
        async with self._connection(f"reading the events of run {run_id}") as conn:
            rows = await conn.fetch(
                "SELECT run_id, sequence, event_id, event_type, created_at, payload, "
                "parent_event_id FROM avo_events WHERE run_id = $1 ORDER BY sequence",
                run_id,
            )
        return [_event(row) for row in rows]

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """The run's latest checkpoint in full (one consistent snapshot), or None."""
        action = f"reading the checkpoint of run {run_id}"
        async with self._transaction(action, isolation="repeatable_read") as conn:
            return await read_latest(conn, run_id)

    async def is_terminal_run(self, run_id: str) -> bool:
        """True when the run's log ends with a terminal event (False for an unknown run)."""
        async with self._connection(f"reading run {run_id}") as conn:
            row = await conn.fetchrow(
                "SELECT log_terminal, state FROM avo_runs WHERE run_id = $1", run_id
            )
        return row is not None and _terminal(row)


def _same_run(run: RunRecord, event: AgentEvent) -> None:
    if run.run_id != event.run_id:
        raise StorageError(
            f"run record {run.run_id} and event {event.event_type.value} of run "
            f"{event.run_id} disagree; pass the record of the event's run"
        )


def _terminal(row: Any) -> bool:
    return bool(row["log_terminal"]) or is_terminal(RunState(row["state"]))


def _record(text: str) -> RunRecord:
    return RunRecord.model_validate_json(text)


def _event(row: Any) -> AgentEvent:
    created_at: datetime = row["created_at"]
    return AgentEvent(
        event_id=row["event_id"],
        run_id=row["run_id"],
        sequence=row["sequence"],
        event_type=EventType(row["event_type"]),
        created_at=created_at,
        payload=json.loads(row["payload"]),
        parent_event_id=row["parent_event_id"],
    )
