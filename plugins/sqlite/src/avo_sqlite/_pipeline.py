"""Pipelined batches for SQLiteCore (a mixin): staged while a commit is in flight.

While the worker thread commits a group (see ``_group``), the connection is
the worker's. A batch that arrives meanwhile need not wait for it: when
everything it must check is cached (the run's log summary and key, its lease
check, its checkpoint cursor), :meth:`PipelineOps.pipelined_batch` validates,
numbers and encodes it and plans its checkpoint on the event loop thread,
touching only Python state, and returns its rows (:class:`Piped`). The
group keeps such batches and, once the connection is free, hands them to
:meth:`PipelineOps.commit_pipeline` on the worker thread, which inserts
them into a transaction (its own, or the one open on the connection) and
commits it. So the event loop stages the next group while the worker
commits the last one.

What was checked from caches is checked again before insertion when the
caches may have moved meanwhile (another connection committed, or a lease
changed here: ``checks_epoch``): the run's lease row and its last sequence. A
batch that fails there, or whose rows SQLite refuses, fails alone; a commit
that fails fails every batch of its transaction. Either way the failed runs'
cached state is dropped (it holds the batch), so their next write reloads it.
"""

from __future__ import annotations

import sqlite3
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from avo.events import AgentEvent, RunLogState
from avo.exceptions import StorageError
from avo.models import Checkpoint, RunRecord
from avo.storage.batch import apply_batch, check_batch_shape, stale_batch
from avo.storage.leases import Lease
from avo_sqlite._checkpoints import CheckpointCursor, DeltaPlan
from avo_sqlite._codec import key_range
from avo_sqlite._payloads import event_row
from avo_sqlite._txn import Deferred


@dataclass
class Piped:
    """A batch staged while a commit was in flight, waiting for the next one."""

    write: int  # its write number (``write_errors``)
    run: RunRecord  # the run head it writes
    lease: Lease | None
    key: int  # the run's key
    first: int  # the sequence of its first event
    epoch: int  # ``checks_epoch`` when its checks were taken from the caches
    rows: Deferred


class PipelineOps:
    """Staging on the loop thread, inserting and committing on the worker (see above)."""

    conn: sqlite3.Connection
    read_only: str | None
    txn_gen: int
    pending_since: float | None
    checks_epoch: int
    write_id: int
    _broken: StorageError | None
    _states: OrderedDict[str, RunLogState]
    _cursors: OrderedDict[str, CheckpointCursor]
    _keys: dict[str, int]
    _fresh: set[str]
    _leases_checked: set[tuple[str, int | None]]
    _pending_runs: dict[str, RunRecord]
    _deferred: list[Deferred]
    _txn_runs: set[str]
    write_errors: dict[int, StorageError]

    if TYPE_CHECKING:  # provided by SQLiteCore and its other mixins

        def _forget(self, run_id: str) -> None: ...

        def _planned(
            self, run_id: str, key: int, cursor: CheckpointCursor | None, checkpoint: Checkpoint
        ) -> DeltaPlan: ...

        def _keep_cursor(self, run_id: str, cursor: CheckpointCursor) -> None: ...

        def _begin(self) -> None: ...

        def _see_other_writers(self) -> None: ...

        def _error(self, action: str, exc: sqlite3.Error | UnicodeEncodeError) -> StorageError: ...

        def _check_lease_row(self, run_id: str, lease: Lease | None) -> None: ...

        def flush(self) -> None: ...

    def pipelined_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None,
        lease: Lease | None,
    ) -> tuple[list[AgentEvent], Piped] | None:
        """Stage a batch without the connection, or None when it needs the connection.

        Raises what ``append_batch`` would raise for a batch it refuses (nothing
        staged then). Runs on the event loop thread while the worker may be
        committing: it reads the caches with single lookups and writes only
        this run's entries (the worker touches only runs it commits).
        """
        if self._broken is not None:
            raise self._broken
        epoch = self.checks_epoch  # first: a change after this line makes the batch rechecked
        run_id = run.run_id
        state = self._states.get(run_id)
        key = self._keys.get(run_id)
        if (
            state is None
            or key is None
            or self.read_only is not None
            or run_id not in self._fresh
            or not state.created
            or (run_id, None if lease is None else lease.token) not in self._leases_checked
        ):
            return None
        cursor = None
        if checkpoint is not None:
            cursor = self._cursors.get(run_id)
            if cursor is None:  # the run's first checkpoint here: it reads the last one
                return None
        for event in events:
            if event.parent_event_id is not None:
                return None
        check_batch_shape(run, events, checkpoint)
        self.write_id += 1
        first = state.last_sequence + 1
        try:
            stored = apply_batch(state, run, events, checkpoint)
            plan = None if checkpoint is None else self._planned(run_id, key, cursor, checkpoint)
            rows = [event_row(key, event) for event in stored]
        except BaseException:
            self._forget(run_id)  # the log summary may hold part of it
            raise
        if plan is None:
            deferred = Deferred(self.write_id, run_id, rows, [], None, None)
        else:
            deferred = Deferred(self.write_id, run_id, rows, plan.items, plan.head, None)
            self._keep_cursor(run_id, plan.cursor)
        return stored, Piped(self.write_id, run, lease, key, first, epoch, deferred)

    def commit_pipeline(self, batches: list[Piped]) -> None:
        """Insert staged batches into the open transaction (begun if none) and commit it.

        On the worker thread, holding the core's lock. A batch refused here
        fails alone (``write_errors``); raises the StorageError every batch
        gets when the transaction cannot begin or its commit fails.
        """
        try:
            if self._broken is not None:
                raise self._broken
            if not self.conn.in_transaction:
                self._begin()
                self.txn_gen += 1
                self.pending_since = time.monotonic()
                self._see_other_writers()
        except BaseException as exc:
            for piped in batches:
                self._forget(piped.run.run_id)
            if isinstance(exc, sqlite3.Error):
                raise self._error("appending a batch of events", exc) from exc
            raise
        for piped in batches:
            run_id = piped.run.run_id
            if piped.epoch != self.checks_epoch:
                try:
                    self._recheck(piped)
                except (StorageError, sqlite3.Error) as exc:
                    self._forget(run_id)
                    error = exc if isinstance(exc, StorageError) else self._error("checking", exc)
                    self.write_errors[piped.write] = error
                    continue
            self._txn_runs.add(run_id)
            piped.rows.pending_run = self._pending_runs.get(run_id)
            self._deferred.append(piped.rows)
            self._pending_runs[run_id] = piped.run
        self.flush()

    def _recheck(self, piped: Piped) -> None:
        """The checks a staged batch took from caches, made again against the database."""
        run_id = piped.run.run_id
        self._check_lease_row(run_id, piped.lease)
        low, high = key_range(piped.key)
        row: Any = self.conn.execute(
            "SELECT MAX(event_key) FROM events WHERE event_key BETWEEN ? AND ?", (low, high)
        ).fetchone()
        last = 0 if row[0] is None else int(row[0]) - low
        if last != piped.first - 1:
            raise stale_batch(run_id, piped.first, last + 1)


__all__ = ["PipelineOps", "Piped"]
