"""SQLiteEventStore: the EventStore protocol on one SQLite file.

Calls that cannot block run on the event loop thread; every blocking SQLite
call (waiting for another process's write lock, an fsync) runs on the store's
own worker thread, so a slow disk or a lock held elsewhere stalls only the run
that waits for it, never the event loop. Writes from many runs share one
transaction and one commit (group commit, see ``_group``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from avo.events import AgentEvent
from avo.exceptions import StorageError
from avo.models import Checkpoint, RunRecord
from avo.storage.leases import Lease
from avo_sqlite._core import SQLiteCore
from avo_sqlite._group import GroupCommit, cancel_again
from avo_sqlite._txn import WouldBlock
from avo_sqlite._worker import Worker
from avo_sqlite.blobs import SQLiteBlobs
from avo_sqlite.sessions import SQLiteSessions

T = TypeVar("T")
_BLOCKED = object()


def _location_to_path(location: str | Path) -> Path:
    text = str(location)
    if text.startswith("sqlite://"):
        text = text.removeprefix("sqlite://")
        # sqlite:///relative.db -> "/relative.db" would be absolute; follow the
        # SQLAlchemy convention: three slashes relative, four absolute.
        text = text[1:] if text.startswith("/") else text
    return Path(text)


class SQLiteEventStore(SQLiteSessions, SQLiteBlobs):
    """Durable event store on SQLite (WAL mode), with delta checkpoints and run leases.

    It also keeps sessions (:mod:`avo.sessions`; see :mod:`avo_sqlite.sessions`).

    ``synchronous`` is SQLite's ``PRAGMA synchronous``: ``"NORMAL"`` (default)
    survives any process crash; ``"FULL"`` also survives power loss at the cost
    of one fsync per commit.

    Group commit: a write that precedes or records a tool's effect (a tool
    start or result), creates or ends a run, or changes a lease returns once it
    is durable; writes of many runs that arrive together share one commit.
    ``commit_delay`` (seconds) bounds how long effect-free writes (state
    changes, model responses, checkpoints), acknowledged at once, wait for the
    next commit. A crash therefore loses at most that window of effect-free
    events: the stored log is always a prefix that resume handles. ``0`` makes
    every write durable before it returns.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        commit_delay: float = 0.005,
    ) -> None:
        self.path = _location_to_path(path)
        if commit_delay < 0:
            raise StorageError(f"commit_delay must be >= 0 seconds, got {commit_delay!r}")
        self._closed = False
        location = self.path
        self._worker = Worker(
            lambda: SQLiteCore(location, synchronous=synchronous, commit_delay=commit_delay)
        )
        self._core = self._worker.core
        self._group = GroupCommit(self._core, self._worker)

    def __repr__(self) -> str:
        return f"SQLiteEventStore({str(self.path)!r})"

    async def _call(
        self, fn: Callable[..., T], *args: Any, turn: bool = True, drain: bool = True
    ) -> T:
        """Run ``fn`` now if it cannot block, else on the worker thread.

        A call runs on the event loop thread only when the connection is free and
        it needs no lock it would have to wait for (see ``SQLiteCore._begin``);
        it is then pure CPU, like the in-memory store. Anything that could wait
        (a write lock held by another connection) runs on the worker thread.
        While a commit runs on the worker (``synchronous="FULL"``), calls wait
        for it and then open the next transaction on this thread.
        """
        # Let other tasks (other runs) take a turn, as a real I/O wait would: a run whose
        # provider and tools never wait (a fake model, synchronous tools) cannot hold
        # the event loop. (Yielding only once per millisecond of calls saves ~3 % of a
        # step but doubles other tasks' p99 wait in benchmarks/store_growth.py.) It
        # comes before the call, not after: a cancellation landing here stores nothing,
        # and once an inline call ran nothing is awaited before its result is returned.
        if turn:
            await asyncio.sleep(0)
        if self._closed:
            raise StorageError(f"the SQLite store {self.path} is closed")
        if self._group.in_flight is not None:
            await self._group.landed()
        core = self._core
        if drain:  # every call but a batch sees the batches deferred before it (see ``_txn``)
            fn, args = core.drained, (fn, *args)
        if core.lock.acquire(blocking=False):
            result: Any = _BLOCKED
            try:
                core.inline = True
                try:
                    result = fn(*args)
                except WouldBlock:
                    pass
                finally:
                    core.inline = False
            finally:
                core.lock.release()
            if result is not _BLOCKED:
                return cast(T, result)
        future = asyncio.wrap_future(self._worker.submit(fn, *args))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The write may already be staged: finish it and hand its result back, so
            # the caller's view (its RunLogState) matches the store; the cancellation is
            # delivered at the caller's next await instead.
            while not future.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(future)
            cancel_again()
            return cast(T, future.result())

    def _staged(self, fn: Callable[..., T], *args: Any) -> tuple[T, int, bool, int]:
        """``fn(*args)`` (a core write), with its transaction, whether it must be durable,
        and its number (``write_errors``)."""
        result = fn(*args)
        core = self._core
        return result, core.txn_gen, core.wants_commit, core.write_id

    async def _write(self, run_id: str, fn: Callable[..., T], *args: Any, batch: bool = False) -> T:
        """A core write, returned once durable when it must be (see ``_group``).

        ``batch``: ``fn`` is the core's ``append_batch``, whose rows the commit inserts.
        """
        # While runs write together, a write that must be durable waits for the round's
        # group commit anyway: that is its turn, and writing at once joins this round.
        grouped = self._group.grouping(run_id)
        result, gen, durable, write = await self._call(
            self._staged, fn, *args, turn=not grouped, drain=not batch
        )
        if durable:
            await self._group.durable(gen, grouped)
        else:
            self._group.later()
        if batch:  # its rows went in with the commit, or failed alone
            error = self._core.write_errors.pop(write, None)
            if error is not None:
                raise error
        return cast(T, result)

    # ------------------------------------------------------------------ protocol
    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        """Store a new run with its RUN_CREATED event (one transaction)."""
        return await self._write(run.run_id, self._core.create_run, run, event, None)

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        """Validate and append one event; returns it with its sequence."""
        return await self._write(event.run_id, self._core.append_event, event, None)

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        """Append an event and replace the run record in one transaction."""
        core = self._core
        return await self._write(run.run_id, core.append_event_and_update_run, event, run, None)

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        """Store a checkpoint (as a delta) and its CHECKPOINT_CREATED event in one transaction."""
        core = self._core
        return await self._write(checkpoint.run_id, core.save_checkpoint, checkpoint, event, None)

    async def append_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None = None,
    ) -> list[AgentEvent]:
        """Append ``events``, replace the run head and store ``checkpoint`` in one transaction.

        All or nothing (see ``avo.storage.base.BatchEventStore``), and durable
        before this returns; batches of other runs written meanwhile share the
        commit (group commit).
        """
        core = self._core
        return await self._write(
            run.run_id, core.append_batch, run, events, checkpoint, None, batch=True
        )

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        """Append the final STATE_CHANGED and terminal events and the run record atomically."""
        core = self._core
        return await self._write(
            run.run_id, core.finalize_run, run, state_event, terminal_event, None
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run record, or None."""
        return await self._call(self._core.get_run, run_id)

    async def update_run(self, run: RunRecord) -> RunRecord:
        """Replace the run record (RunNotFoundError if it does not exist)."""
        return await self._write(run.run_id, self._core.update_run, run, None)

    async def list_runs(self) -> list[RunRecord]:
        """Every run, newest first."""
        return await self._call(self._core.list_runs)

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        """The run's events in ascending sequence."""
        return await self._call(self._core.get_events, run_id)

    async def get_events_after(self, run_id: str, after: int) -> list[AgentEvent]:
        """The run's events with a sequence above ``after``, ascending (a live run's tail)."""
        return await self._call(self._core.get_events_after, run_id, after)

    async def query_runs(self, query: Any) -> Any:
        """One page of the runs matching ``query`` (an ``avo.storage.queries.RunQuery``)."""
        from avo_sqlite.run_queries import query_page

        return await self._call(query_page, self._core, query)

    async def run_facet_values(self) -> Any:
        """Providers, models, tools and stop reasons of the newest runs (for filter pickers)."""
        from avo_sqlite.run_queries import facet_sample

        return await self._call(facet_sample, self._core)

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """The run's latest checkpoint, reassembled in full, or None."""
        return await self._call(self._core.get_latest_checkpoint, run_id)

    async def is_terminal_run(self, run_id: str) -> bool:
        """Whether the run reached a terminal state."""
        return await self._call(self._core.is_terminal_run, run_id)

    async def close(self) -> None:
        """Close the connection and stop the worker thread (idempotent)."""
        if self._closed:
            return
        with contextlib.suppress(StorageError):  # waiting writers get the commit's outcome
            await self._group.commit_now()
        self._closed = True
        await asyncio.to_thread(self._worker.stop)
        self._close_sessions()
        self._close_blobs()

    async def __aenter__(self) -> SQLiteEventStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ------------------------------------------------------------------ lifecycle
    async def delete_run(self, run_id: str) -> bool:
        """Delete a finished run with its events, checkpoints and ledger rows (one transaction).

        Returns False when the run does not exist; raises StorageError for a run
        that is not terminal.
        """
        return await self._write(run_id, self._core.delete_run, run_id)

    async def flush(self) -> None:
        """Commit group-committed writes now (visible to other connections, durable)."""
        await self._group.commit_now()

    async def database_bytes(self) -> int:
        """Bytes of the database in use (pages minus free pages)."""
        return await self._call(self._core.database_bytes)

    # ------------------------------------------------------------------ leases
    async def get_lease(self, run_id: str) -> Lease | None:
        """The run's live lease (owner and expiry), or None when nobody holds it."""
        return await self._call(self._core.get_lease, run_id)

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> Lease:
        """Take the run's lease for ``ttl`` seconds; the token is bumped on every acquisition."""
        return await self._write(run_id, self._core.acquire_lease, run_id, owner, ttl)

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend a lease this writer still holds (LeaseError if fenced off)."""
        return await self._write(lease.run_id, self._core.renew_lease, lease, ttl)

    async def release_lease(self, lease: Lease) -> None:
        """Give the lease up (a no-op if it was already taken over)."""
        await self._write(lease.run_id, self._core.release_lease, lease)

    def fenced(self, lease: Lease) -> FencedSQLiteEventStore:
        """An EventStore view whose every write requires ``lease`` to be current."""
        return FencedSQLiteEventStore(self, lease)


class FencedSQLiteEventStore:
    """The writes of a SQLiteEventStore, each checked against one lease's fencing token."""

    def __init__(self, store: SQLiteEventStore, lease: Lease) -> None:
        self.store = store
        self.lease = lease

    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        """create_run, fenced."""
        core = self.store._core
        return await self.store._write(run.run_id, core.create_run, run, event, self.lease)

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        """append_event, fenced."""
        core = self.store._core
        return await self.store._write(event.run_id, core.append_event, event, self.lease)

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        """append_event_and_update_run, fenced."""
        core = self.store._core
        return await self.store._write(
            run.run_id, core.append_event_and_update_run, event, run, self.lease
        )

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        """save_checkpoint, fenced."""
        core = self.store._core
        return await self.store._write(
            checkpoint.run_id, core.save_checkpoint, checkpoint, event, self.lease
        )

    async def append_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None = None,
    ) -> list[AgentEvent]:
        """append_batch, fenced."""
        core = self.store._core
        return await self.store._write(
            run.run_id, core.append_batch, run, events, checkpoint, self.lease, batch=True
        )

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        """finalize_run, fenced."""
        core = self.store._core
        return await self.store._write(
            run.run_id, core.finalize_run, run, state_event, terminal_event, self.lease
        )

    async def update_run(self, run: RunRecord) -> RunRecord:
        """update_run, fenced."""
        core = self.store._core
        return await self.store._write(run.run_id, core.update_run, run, self.lease)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """get_run of the underlying store."""
        return await self.store.get_run(run_id)

    async def list_runs(self) -> list[RunRecord]:
        """list_runs of the underlying store."""
        return await self.store.list_runs()

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        """get_events of the underlying store."""
        return await self.store.get_events(run_id)

    async def get_events_after(self, run_id: str, after: int) -> list[AgentEvent]:
        """get_events_after of the underlying store."""
        return await self.store.get_events_after(run_id, after)

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """get_latest_checkpoint of the underlying store."""
        return await self.store.get_latest_checkpoint(run_id)

    async def get_lease(self, run_id: str) -> Lease | None:
        """get_lease of the underlying store."""
        return await self.store.get_lease(run_id)

    async def is_terminal_run(self, run_id: str) -> bool:
        """is_terminal_run of the underlying store."""
        return await self.store.is_terminal_run(run_id)

    async def close(self) -> None:
        """A view owns nothing: closing it leaves the store open."""
