"""Transactions of SQLiteCore (a mixin, first among its bases): one transaction, many writes.

Writes stage their rows into the connection's open transaction and leave it
open; committing is the store's group commit (``_group``): it commits once for
every write that arrived meanwhile, from any run. So a write here never
commits by itself. A write that joins an open transaction runs under a
savepoint, so if it fails half-way only its own rows are rolled back and the
other writes of the group stay. Every write validates all it will write before
its first statement, so a refused write changes nothing anyway.

``txn_gen`` numbers transactions (one per ``BEGIN``) and ``committed_gen`` is
the newest one that was settled: a write staged in transaction ``g`` is
durable once ``committed_gen >= g``, unless ``failed`` holds ``g`` (its
commit failed, with that error).

A batch (``append_batch``: the runtime's writes) that joins a transaction
other writes began (runs writing together) does its checks, numbering and
encoding at once, but hands its rows (events, checkpoint items and head) to
the transaction instead of inserting them (:meth:`Transactions.defer`):
the commit inserts every deferred row of the transaction with one
``executemany`` per table, then commits. A group's commit runs on the
worker thread, so that C work (the GIL released) overlaps the event loop's
Python. Any other call on the connection first inserts what is deferred
(:meth:`Transactions.drain`), so every read sees every write before it. If
inserting them fails, the transaction fails as a whole, like a failed commit.
"""

from __future__ import annotations

import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from avo.exceptions import StorageError
from avo.models import RunRecord
from avo_sqlite._checkpoints import INSERT_HEAD, INSERT_ITEM
from avo_sqlite._payloads import INSERT_ROOT_EVENT
from avo_sqlite._schema import BUSY_TIMEOUT_MS, read_only_error
from avo_sqlite._write_lock import is_busy, wait_for_write_lock

T = TypeVar("T")


@dataclass
class _Deferred:
    """One batch's rows, waiting for the commit (see the module docstring)."""

    write: int  # Transactions.write_id of the batch's write
    run_id: str
    events: list[Any]
    items: list[Any]
    head: tuple[Any, ...] | None
    pending_run: RunRecord | None  # the run head pending before the batch


def _insert(conn: sqlite3.Connection, batches: list[_Deferred]) -> None:
    events = [row for batch in batches for row in batch.events]
    items = [row for batch in batches for row in batch.items]
    heads = [batch.head for batch in batches if batch.head is not None]
    if events:
        conn.executemany(INSERT_ROOT_EVENT, events)
    if items:
        conn.executemany(INSERT_ITEM, items)
    if heads:
        conn.executemany(INSERT_HEAD, heads)


class WouldBlock(Exception):
    """Raised before any change when a call on the event loop thread would have to wait."""


class Transactions:
    """The open transaction of SQLiteCore's connection (see the module docstring)."""

    conn: sqlite3.Connection
    path: Path
    read_only: str | None
    commit_delay: float
    inline: bool
    _busy_ms: int
    _broken: StorageError | None
    _states: OrderedDict[str, Any]
    _cursors: OrderedDict[str, Any]
    _fresh: set[str]
    _leases_checked: set[tuple[str, int | None]]
    _keys: dict[str, int]
    _created: dict[str, datetime]
    _pending_runs: dict[str, RunRecord]
    _data_version: int | None

    def _init_transactions(self) -> None:
        self.txn_gen = 0
        self.committed_gen = 0
        self.failed: dict[int, StorageError] = {}  # transactions whose commit failed
        self.pending_since: float | None = None  # when the open transaction began
        self.wants_commit = False  # the last write must be durable before it returns
        self.acked = False  # the open transaction holds writes already acknowledged
        self.wal_dirty = False
        # Rows of batches in the open transaction, not inserted yet (see the module docstring).
        self._deferred: list[_Deferred] = []
        self.write_id = 0  # numbers writes, for the errors of their deferred rows
        self.joining = False  # the current write joined a transaction begun by another
        self.write_errors: dict[int, StorageError] = {}  # write -> why its rows failed

    if TYPE_CHECKING:  # provided by HeadOps and SQLiteCore (this class comes first in the MRO)

        def _sync_runs(self) -> None: ...

        def _forget(self, run_id: str) -> None: ...

    def _drop_caches(self) -> None:
        self._clear_deferred()
        self._pending_runs.clear()
        self._states.clear()
        self._cursors.clear()
        self._fresh.clear()
        self._leases_checked.clear()

    def _error(self, action: str, exc: sqlite3.Error | UnicodeEncodeError) -> StorageError:
        if isinstance(exc, UnicodeEncodeError):  # text sqlite3 cannot bind (a lone surrogate)
            return StorageError(
                f"cannot store text that is not valid Unicode while {action} in {self.path} "
                f"({exc}); nothing of this write was stored. Use valid text (a lone surrogate "
                "comes from os.fsdecode of undecodable bytes)"
            )
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF == 8:  # SQLITE_READONLY
            return read_only_error(self.path, f"SQLite: {exc}", action)
        return StorageError(f"SQLite error while {action} in {self.path}: {exc}")

    def defer(
        self, run_id: str, events: list[Any], items: list[Any], head: tuple[Any, ...] | None
    ) -> None:
        """Rows of a validated batch, inserted by the commit (or by the next other call).

        Call it before the batch's run head is put (``_put_run``): a batch whose
        rows fail gets back the head that was pending before it.
        """
        self._deferred.append(
            _Deferred(self.write_id, run_id, events, items, head, self._pending_runs.get(run_id))
        )

    def _clear_deferred(self) -> None:
        self._deferred.clear()

    def drain(self) -> None:
        """Insert the deferred rows into the open transaction: one ``executemany`` a table.

        If SQLite refuses a row, each batch is inserted again on its own, under
        a savepoint: a batch that fails is rolled back alone (its write gets the
        error, see ``write_errors``; its run's caches are dropped) and the others
        stay. Raises only what leaves the transaction unusable.
        """
        if not self._deferred:
            return
        batches, self._deferred = self._deferred, []
        conn = self.conn
        conn.execute("SAVEPOINT rows")
        try:
            _insert(conn, batches)
        except (sqlite3.Error, UnicodeEncodeError):
            conn.execute("ROLLBACK TO rows")
            for batch in batches:
                conn.execute("SAVEPOINT batch")
                try:
                    _insert(conn, [batch])
                except (sqlite3.Error, UnicodeEncodeError) as exc:
                    conn.execute("ROLLBACK TO batch")
                    self._batch_failed(batch, exc)
                conn.execute("RELEASE batch")
        conn.execute("RELEASE rows")

    def _batch_failed(self, batch: _Deferred, exc: sqlite3.Error | UnicodeEncodeError) -> None:
        self._forget(batch.run_id)
        if batch.pending_run is None:
            self._pending_runs.pop(batch.run_id, None)
        else:
            self._pending_runs[batch.run_id] = batch.pending_run
        self.write_errors[batch.write] = self._error("appending a batch of events", exc)
        while len(self.write_errors) > 1024:  # their writers were told long ago
            del self.write_errors[min(self.write_errors)]

    def drained(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` once the deferred rows are inserted.

        If inserting them fails, their transaction fails as a whole (its
        waiters get the error, as for a failed commit) and ``fn`` runs after it.
        """
        if self._deferred:
            try:
                self.drain()
            except BaseException as exc:
                # Recorded in `failed` for the transaction's waiters; this call goes on.
                self._fail_transaction(exc)
        return fn(*args)

    def flush(self) -> None:
        """Commit the open transaction (a no-op without one), inserting its deferred rows first.

        If the commit fails, every write of the transaction is lost: the ones
        still waiting get the error; if writes were already acknowledged
        (effect-free writes ride the next commit), the store refuses further
        use, since what it said it stored is gone.
        """
        self.pending_since = None
        if not self.conn.in_transaction:
            self._clear_deferred()
            self._pending_runs.clear()
            self.committed_gen = self.txn_gen
            return
        try:
            self.drain()
            self._sync_runs()
            self.conn.execute("COMMIT")
        except BaseException as exc:
            raise self._fail_transaction(exc) from exc
        self.acked = False
        self.committed_gen = self.txn_gen
        self.wal_dirty = True

    def _fail_transaction(self, exc: BaseException) -> StorageError:
        """Roll the open transaction back after ``exc``; returns the error its writes get."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self._drop_caches()
        acked, self.acked = self.acked, False
        self.pending_since = None
        error = StorageError(
            f"committing writes to {self.path} failed ({exc}); nothing of that transaction "
            "was stored"
        )
        if acked:
            self._broken = StorageError(
                f"committing writes to {self.path} failed ({exc}); effect-free writes "
                "acknowledged before it were lost, so this store refuses further use: reopen it"
            )
            error = self._broken
        self.failed[self.txn_gen] = error
        if len(self.failed) > 64:  # their waiters were told long ago
            del self.failed[min(self.failed)]
        self.committed_gen = self.txn_gen
        return error

    def _begin(self) -> None:
        """BEGIN IMMEDIATE; on the loop thread only if the write lock is free right now.

        A loop-thread call tries once and hands the call to the worker
        (WouldBlock, nothing changed) if another connection holds the lock. The
        worker waits for it up to ``BUSY_TIMEOUT_MS`` (see
        :func:`~avo_sqlite._write_lock.wait_for_write_lock`).
        """
        # Busy timeout 0 for both threads: waits are ours, not SQLite's busy handler.
        self._busy_timeout(0)
        if not self.inline:
            wait_for_write_lock(self.conn, BUSY_TIMEOUT_MS / 1000)
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise WouldBlock from exc
            raise

    def _busy_timeout(self, ms: int) -> None:
        if self._busy_ms != ms:
            self.conn.execute(f"PRAGMA busy_timeout = {ms}")
            self._busy_ms = ms

    def _see_other_writers(self) -> None:
        """Forget the checks made before this transaction if another connection committed since.

        ``PRAGMA data_version`` changes exactly when another connection (process or
        store) committed: while it does not, the cached run states, checkpoint
        cursors and lease checks still describe the database.
        """
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._data_version = version
            self._fresh.clear()
            self._leases_checked.clear()

    @contextmanager
    def _write(self, run_id: str, action: str, *, barrier: bool) -> Iterator[sqlite3.Connection]:
        """One write into the open transaction (begun if there is none); never commits.

        ``barrier``: the write precedes or records a tool's effect, or ends the
        run, so it must be durable before its caller goes on (``wants_commit``);
        with ``commit_delay`` 0 every write must. Other writes are acknowledged
        at once and ride the next commit.
        """
        if self._broken is not None:
            raise self._broken
        if self.read_only is not None:
            raise read_only_error(self.path, self.read_only, action)
        self.write_id += 1
        conn = self.conn
        outer = not conn.in_transaction
        try:
            if outer:
                self._begin()
                self.txn_gen += 1
                self.pending_since = time.monotonic()
            else:
                conn.execute("SAVEPOINT write")
        except sqlite3.Error as exc:
            raise self._error(action, exc) from exc
        self.joining = not outer
        try:
            if outer:
                self._see_other_writers()
            yield conn
        except BaseException as exc:
            self._forget(run_id)
            self._keys.pop(run_id, None)  # a run created by this write is gone again
            self._created.pop(run_id, None)
            if outer:
                self._pending_runs.clear()
                self._clear_deferred()
                conn.execute("ROLLBACK")
                self.pending_since = None
                self.acked = False
                self.committed_gen = self.txn_gen  # nothing of it is left to commit
            else:
                conn.execute("ROLLBACK TO write")
                conn.execute("RELEASE write")
            if isinstance(exc, sqlite3.Error | UnicodeEncodeError):
                raise self._error(action, exc) from exc
            raise
        if not outer:
            conn.execute("RELEASE write")
        durable = barrier or self.commit_delay <= 0
        self.wants_commit = durable
        if not durable:
            self.acked = True


__all__ = ["Transactions", "WouldBlock"]
