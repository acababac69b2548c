"""PostgresEventStore: the EventStore on PostgreSQL, shared by many processes.

Every write is one SQL statement: a compare-and-set on the run's row (the run
must still end at the sequence the writer validated against, and the writer's
lease must be current) that also inserts the events, the run record and the
checkpoint rows, all or nothing. The writer validates the event invariants with
:func:`avo.events.validate_event_append` against the run's log summary as of
that sequence; when another writer got there first, the store reloads the
summary from the database and validates again. So invariants hold against the
database's current state, per-run sequences are gapless and unique, and an
uncontended append costs one round trip (see :mod:`avo_postgres.writes`).
:meth:`PostgresEventStore.append_batch` (the kernel's optional
:class:`avo.storage.base.BatchEventStore`) sends a whole run step the same
way: its events, the run head and a checkpoint in that one statement.

One writer per run: :meth:`PostgresEventStore.acquire_lease` grants a lease
with a fencing token (a per-run counter that only grows) and
:meth:`PostgresEventStore.fenced` gives a view whose writes carry it; a write
whose token is not the run's newest is refused with
:class:`avo.exceptions.LeaseError` and writes nothing (see
:mod:`avo_postgres.leases`).
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, TypeVar

from avo.events import (
    TERMINAL_EVENT_TYPES,
    AgentEvent,
    RunLogState,
    validate_event_append,
)
from avo.exceptions import EventInvariantError, LeaseError, StorageError
from avo.models import Checkpoint, RunRecord
from avo.storage.batch import check_batch_shape
from avo.storage.leases import Lease
from avo_postgres import leases
from avo_postgres.blobs import PostgresBlobs
from avo_postgres.checkpoints import CachedLists
from avo_postgres.connection import (
    DEFAULT_CONNECT_TIMEOUT,
    connection_broken,
    open_pool,
    parse_dsn,
    redact_dsn,
    storage_errors,
)
from avo_postgres.group import GroupWriter
from avo_postgres.leases import FencedPostgresStore
from avo_postgres.reads import StoreReads
from avo_postgres.rows import row_is_terminal
from avo_postgres.schema import migrate
from avo_postgres.sessions import PostgresSessions
from avo_postgres.write_ops import WriteOps
from avo_postgres.writes import Head, insert_run

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")

_T = TypeVar("_T")


class PostgresEventStore(WriteOps, StoreReads, PostgresSessions, PostgresBlobs):
    """The EventStore protocol on PostgreSQL (asyncpg), safe for many writers.

    ``dsn`` is a ``postgresql://user[:password]@host[:port]/database`` URL. The
    pool opens on first use (or ``async with``), applying schema migrations.
    ``schema`` keeps the store's tables in that PostgreSQL schema (created when
    missing) so several stores can share one database; ``application_name``
    labels its connections in ``pg_stat_activity``. ``connection_init`` is
    awaited with every new pooled asyncpg connection (to register a codec or a
    query logger, say). ``concurrency`` is how many runs this store is expected
    to drive at once; without an explicit ``pool_max_size`` it sizes the pool
    (:func:`pool_size_for`). It also keeps sessions (:mod:`avo.sessions`; see
    :mod:`avo_postgres.sessions`).
    """

    def __init__(
        self,
        dsn: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        command_timeout: float | None = 60.0,
        pool_min_size: int = 1,
        pool_max_size: int | None = None,
        concurrency: int | None = None,
        schema: str | None = None,
        application_name: str = "avo",
        connection_init: Callable[[Any], Awaitable[None]] | None = None,
    ) -> None:
        if schema is not None and not _IDENTIFIER.fullmatch(schema):
            raise StorageError(
                f"postgres store schema {schema!r} is not a plain identifier; use lower-case "
                "letters, digits and underscores, starting with a letter or underscore"
            )
        self._schema = schema
        self._application_name = application_name
        self._connection_init = connection_init
        self._dsn = dsn
        self._address = parse_dsn(dsn)
        self._connect_timeout = connect_timeout
        self._command_timeout = command_timeout
        if pool_max_size is None:
            pool_max_size = pool_size_for(concurrency)
        self._pool_min_size = min(pool_min_size, pool_max_size)
        self._pool_max_size = pool_max_size
        self._pool: Any = None
        self._opening = asyncio.Lock()
        self._closed = False
        self._checkpoint_cache: dict[str, CachedLists] = {}
        self._heads: OrderedDict[str, Head] = OrderedDict()
        self._run_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        # Batches of many runs in one statement; up to half the pool's connections
        # carry group statements at once, the rest serve reads and single writes.
        self._group = GroupWriter(self._send_group, parallel=max(1, pool_max_size // 2))

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
                application_name=self._application_name,
                init=self._connection_init,
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
        """A pooled connection; driver errors while ``action`` become StorageError.

        A connection that broke (server restart, killed backend, network) is
        closed, so the pool replaces it instead of handing it out again.
        """
        pool = await self._ensure_pool()
        async with storage_errors(self._address, action), pool.acquire() as conn:
            try:
                yield conn
            except BaseException as exc:
                if connection_broken(exc):
                    conn.terminate()
                raise

    async def _read(self, action: str, query: Callable[[Any], Awaitable[_T]]) -> _T:
        """Run an idempotent read; once more on a fresh connection if the first one broke."""
        for attempt in (1, 2):
            try:
                async with self._connection(action) as conn:
                    return await query(conn)
            except StorageError as exc:
                if attempt == 2 or exc.__cause__ is None or not connection_broken(exc.__cause__):
                    raise
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def _transaction(self, action: str, isolation: str | None = None) -> AsyncIterator[Any]:
        """A connection inside one transaction, committed when the block succeeds."""
        async with self._connection(action) as conn, conn.transaction(isolation=isolation):
            yield conn

    async def _send_group(self, sql: str, args: list[Any]) -> list[str]:
        """Run one group statement (see avo_postgres.group); the run ids it applied."""
        async with self._connection("writing a group of batches") as conn:
            applied: list[str] = await conn.fetchval(sql, *args)
            return applied

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
        return await self._create_run(run, event, lease=None)

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        """Append one event; the store assigns its sequence."""
        return await self._append(event, None, lease=None)

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        """Append ``event`` and store ``run`` atomically."""
        return await self._append_and_update(event, run, lease=None)

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        """Append the CHECKPOINT_CREATED event and store the checkpoint (a delta), atomically."""
        return await self._save_checkpoint(checkpoint, event, lease=None)

    async def append_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None = None,
    ) -> list[AgentEvent]:
        """Append ``events``, store ``run`` and ``checkpoint``: all or nothing, one statement.

        The events are validated in order against the run's log; the
        checkpoint's CHECKPOINT_CREATED event must be among them and no event
        may be terminal (see :class:`avo.storage.base.BatchEventStore`).
        Uncontended, with this instance's head of the run warm, the batch costs
        one round trip whatever its length.
        """
        return await self._append_batch(run, events, checkpoint, lease=None)

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        """Append the final STATE_CHANGED and the terminal event and store ``run``, atomically.

        Of two writers racing to finalize one run exactly one wins; the other
        gets EventInvariantError (nothing may follow a terminal event).
        """
        return await self._finalize(run, state_event, terminal_event, lease=None)

    async def update_run(self, run: RunRecord) -> RunRecord:
        """Store ``run``'s record; RunNotFoundError when it does not exist."""
        return await self._update_run(run, lease=None)

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
            if not row_is_terminal(row):
                raise StorageError(
                    f"run {run_id} is not finished; only terminal runs can be deleted"
                )
            await conn.execute("DELETE FROM avo_runs WHERE run_id = $1", run_id)
            await conn.execute("DELETE FROM avo_leases WHERE run_id = $1", run_id)
        self._checkpoint_cache.pop(run_id, None)
        self._heads.pop(run_id, None)
        return True

    # The implementations; ``lease`` is the lease of a fenced() view (None: unfenced).
    async def _create_run(
        self, run: RunRecord, event: AgentEvent, *, lease: Lease | None
    ) -> RunRecord:
        _same_run(run, event)
        log = RunLogState(run_id=run.run_id)
        validate_event_append(log, event)
        stored = event.model_copy(update={"sequence": 1})
        log.apply(stored)
        async with self._transaction(f"creating run {run.run_id}") as conn:
            await insert_run(conn, run, stored, lease)
        self._remember(Head(log=log, complete=True))
        return run

    async def _append(
        self, event: AgentEvent, run: RunRecord | None, *, lease: Lease | None
    ) -> AgentEvent:
        staged = await self._write(event.run_id, [event], run, None, lease, "appending an event")
        return staged.events[0]

    async def _append_and_update(
        self, event: AgentEvent, run: RunRecord, *, lease: Lease | None
    ) -> tuple[AgentEvent, RunRecord]:
        _same_run(run, event)
        return await self._append(event, run, lease=lease), run

    async def _finalize(
        self,
        run: RunRecord,
        state_event: AgentEvent,
        terminal_event: AgentEvent,
        *,
        lease: Lease | None,
    ) -> tuple[AgentEvent, AgentEvent]:
        _same_run(run, state_event)
        _same_run(run, terminal_event)
        if terminal_event.event_type not in TERMINAL_EVENT_TYPES:
            raise EventInvariantError(
                f"run {run.run_id}: finalize_run needs a terminal event, got "
                f"{terminal_event.event_type.value}",
                run_id=run.run_id,
            )
        staged = await self._write(
            run.run_id, [state_event, terminal_event], run, None, lease, "finalizing the run"
        )
        return staged.events[0], staged.events[1]

    async def _save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent, *, lease: Lease | None
    ) -> tuple[Checkpoint, AgentEvent]:
        if checkpoint.run_id != event.run_id:
            raise StorageError(
                f"checkpoint is for run {checkpoint.run_id} but its event is for run "
                f"{event.run_id}; pass the CHECKPOINT_CREATED event of the same run"
            )
        staged = await self._write(
            event.run_id, [event], None, checkpoint, lease, "saving a checkpoint"
        )
        return checkpoint, staged.events[0]

    async def _append_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None,
        *,
        lease: Lease | None,
    ) -> list[AgentEvent]:
        batch = list(events)
        check_batch_shape(run, batch, checkpoint)
        action = f"appending a batch of {len(batch)} events"
        staged = await self._write_grouped(run, batch, checkpoint, lease, action)
        return staged.events

    async def _update_run(self, run: RunRecord, *, lease: Lease | None) -> RunRecord:
        await self._write(run.run_id, [], run, None, lease, "updating the run record")
        return run

    # ------------------------------------------------------------ leases
    async def get_lease(self, run_id: str) -> Lease | None:
        """The run's live lease (owner and expiry), or None when nobody holds it. Reads only."""
        async with self._connection(f"reading the lease of run {run_id}") as conn:
            return await leases.current(conn, run_id)

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


DEFAULT_POOL_SIZE = 5
MAX_POOL_SIZE = 20


def pool_size_for(concurrency: int | None) -> int:
    """Connections for a store driving ``concurrency`` runs at once (None: a few).

    Batches of concurrent runs share group statements, so the pool grows much
    slower than the runs: one more connection per ten runs past the default's
    five (for creates, finals and reads, which are not grouped), at most
    :data:`MAX_POOL_SIZE` so that several processes fit the server's
    ``max_connections``.
    """
    if concurrency is None or concurrency <= DEFAULT_POOL_SIZE:
        return DEFAULT_POOL_SIZE
    return min(MAX_POOL_SIZE, DEFAULT_POOL_SIZE + -(-(concurrency - DEFAULT_POOL_SIZE) // 10))


def _same_run(run: RunRecord, event: AgentEvent) -> None:
    if run.run_id != event.run_id:
        raise StorageError(
            f"run record {run.run_id} and event {event.event_type.value} of run "
            f"{event.run_id} disagree; pass the record of the event's run"
        )
