"""The synchronous half of SQLiteEventStore: every statement runs here, on one thread.

:class:`SQLiteCore` owns one connection and the per-run caches. It is only
ever called from the store's single worker thread, so it needs no locks.
Each write method is one ``BEGIN IMMEDIATE`` transaction that (1) checks the
run's lease, (2) re-reads the run's last sequence and reloads the cached
:class:`~avo.events.RunLogState` if another writer (process or store) moved
it, (3) validates every event with :func:`~avo.events.validate_event_append`,
and (4) writes. Any failure rolls back and drops the run's caches, so the next
write rebuilds them from the database.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from avo.events import (
    TERMINAL_EVENT_TYPES,
    AgentEvent,
    EventType,
    RunLogState,
    validate_event_append,
)
from avo.exceptions import (
    EventInvariantError,
    LeaseError,
    RunNotFoundError,
    StorageError,
)
from avo.models import Checkpoint, RunRecord
from avo.state import RunState, is_terminal
from avo.storage.leases import Lease

from avo_sqlite._checkpoints import (
    CheckpointCursor,
    dumps,
    latest_position,
    load_latest,
    save_delta,
)
from avo_sqlite._schema import open_database

_CACHE_RUNS = 256
_TERMINAL_VALUES = frozenset(kind.value for kind in TERMINAL_EVENT_TYPES)


class SQLiteCore:
    """One connection plus the per-run invariant and checkpoint caches."""

    def __init__(self, path: Path, *, synchronous: str) -> None:
        self.path = path
        self.conn = open_database(path, synchronous=synchronous)
        self._states: OrderedDict[str, RunLogState] = OrderedDict()
        self._cursors: OrderedDict[str, CheckpointCursor] = OrderedDict()

    # ------------------------------------------------------------------ helpers
    def close(self) -> None:
        self.conn.close()

    def _forget(self, run_id: str) -> None:
        self._states.pop(run_id, None)
        self._cursors.pop(run_id, None)

    @contextmanager
    def _write(self, run_id: str, action: str) -> Iterator[sqlite3.Connection]:
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StorageError(f"SQLite error while {action} in {self.path}: {exc}") from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            self._forget(run_id)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StorageError(f"SQLite error while {action} in {self.path}: {exc}") from exc
            raise

    def _read(self, action: str) -> Any:
        return _ReadGuard(self.path, action)

    def _check_lease(self, run_id: str, lease: Lease | None) -> None:
        row = self.conn.execute(
            "SELECT owner, token, expires_at FROM leases WHERE run_id = ?", (run_id,)
        ).fetchone()
        if lease is None:
            if row is not None and row[0] is not None and row[2] > time.time():
                raise LeaseError(
                    f"run {run_id} is leased to {row[0]!r} (token {row[1]}); "
                    "write through store.fenced(lease) or wait for the lease to expire",
                    run_id=run_id,
                )
            return
        if lease.run_id != run_id:
            raise LeaseError(
                f"lease for run {lease.run_id} cannot write to run {run_id}", run_id=run_id
            )
        if row is None or row[1] != lease.token or row[0] != lease.owner:
            holder = "nobody" if row is None or row[0] is None else repr(row[0])
            current = "none" if row is None else row[1]
            raise LeaseError(
                f"run {run_id}: the lease of {lease.owner!r} (token {lease.token}) was fenced off; "
                f"the current token is {current}, held by {holder}",
                run_id=run_id,
            )

    def _log_state(self, run_id: str) -> RunLogState:
        """The run's invariant summary, reloaded if another writer appended meanwhile."""
        row = self.conn.execute(
            "SELECT MAX(sequence) FROM events WHERE run_id = ?", (run_id,)
        ).fetchone()
        last = int(row[0]) if row and row[0] is not None else 0
        state = self._states.get(run_id)
        if state is None or state.last_sequence != last:
            state = RunLogState.from_events(run_id, self._events(run_id))
            self._states[run_id] = state
            if len(self._states) > _CACHE_RUNS:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(run_id)
        return state

    def _append(self, state: RunLogState, event: AgentEvent) -> AgentEvent:
        if not state.created and event.event_type is not EventType.RUN_CREATED:
            raise RunNotFoundError(f"run {state.run_id} does not exist", run_id=state.run_id)
        validate_event_append(state, event)
        stored = event.model_copy(update={"sequence": state.last_sequence + 1})
        self.conn.execute(
            "INSERT INTO events (run_id, sequence, event_id, event_type, created_at, payload,"
            " parent_event_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                stored.run_id,
                stored.sequence,
                stored.event_id,
                stored.event_type.value,
                stored.created_at.isoformat(),
                dumps(stored.payload),
                stored.parent_event_id,
            ),
        )
        state.apply(stored)
        return stored

    def _put_run(self, run: RunRecord, *, insert: bool) -> None:
        params = (
            run.created_at.isoformat(),
            run.updated_at.isoformat(),
            run.state.value,
            run.model_dump_json(),
            run.run_id,
        )
        if insert:
            self.conn.execute(
                "INSERT INTO runs (created_at, updated_at, state, record, run_id)"
                " VALUES (?, ?, ?, ?, ?)",
                params,
            )
            return
        cursor = self.conn.execute(
            "UPDATE runs SET created_at = ?, updated_at = ?, state = ?, record = ?"
            " WHERE run_id = ?",
            params,
        )
        if cursor.rowcount == 0:
            raise RunNotFoundError(f"run {run.run_id} does not exist", run_id=run.run_id)

    @staticmethod
    def _same_run(run_id: str, event: AgentEvent) -> None:
        if event.run_id != run_id:
            raise EventInvariantError(
                f"run {run_id}: event {event.event_type.value} belongs to run {event.run_id}",
                run_id=run_id,
            )

    # ------------------------------------------------------------------ writes
    def create_run(self, run: RunRecord, event: AgentEvent, lease: Lease | None) -> RunRecord:
        self._same_run(run.run_id, event)
        if event.event_type is not EventType.RUN_CREATED:
            raise EventInvariantError(
                f"run {run.run_id}: the first event must be run_created, "
                f"got {event.event_type.value}",
                run_id=run.run_id,
            )
        with self._write(run.run_id, "creating a run") as conn:
            self._check_lease(run.run_id, lease)
            state = self._log_state(run.run_id)
            exists = conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run.run_id,)).fetchone()
            if exists is not None and not state.created:
                raise EventInvariantError(
                    f"run {run.run_id}: run_created may appear only once", run_id=run.run_id
                )
            self._append(state, event)
            self._put_run(run, insert=True)
        return run

    def append_event(self, event: AgentEvent, lease: Lease | None) -> AgentEvent:
        with self._write(event.run_id, "appending an event"):
            self._check_lease(event.run_id, lease)
            return self._append(self._log_state(event.run_id), event)

    def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord, lease: Lease | None
    ) -> tuple[AgentEvent, RunRecord]:
        self._same_run(run.run_id, event)
        with self._write(run.run_id, "appending an event"):
            self._check_lease(run.run_id, lease)
            stored = self._append(self._log_state(run.run_id), event)
            self._put_run(run, insert=False)
        return stored, run

    def update_run(self, run: RunRecord, lease: Lease | None) -> RunRecord:
        with self._write(run.run_id, "updating a run"):
            self._check_lease(run.run_id, lease)
            self._put_run(run, insert=False)
        return run

    def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent, lease: Lease | None
    ) -> tuple[Checkpoint, AgentEvent]:
        run_id = checkpoint.run_id
        self._same_run(run_id, event)
        with self._write(run_id, "saving a checkpoint") as conn:
            self._check_lease(run_id, lease)
            stored = self._append(self._log_state(run_id), event)
            saved = checkpoint
            cursor = self._cursors.get(run_id)
            if cursor is None or cursor.position != latest_position(conn, run_id):
                loaded = load_latest(conn, run_id)
                cursor = None if loaded is None else loaded[1]
            self._cursors[run_id] = save_delta(conn, cursor, saved)
            if len(self._cursors) > _CACHE_RUNS:
                self._cursors.popitem(last=False)
        return saved, stored

    def finalize_run(
        self,
        run: RunRecord,
        state_event: AgentEvent,
        terminal_event: AgentEvent,
        lease: Lease | None,
    ) -> tuple[AgentEvent, AgentEvent]:
        self._same_run(run.run_id, state_event)
        self._same_run(run.run_id, terminal_event)
        with self._write(run.run_id, "finalizing a run"):
            self._check_lease(run.run_id, lease)
            state = self._log_state(run.run_id)
            first = self._append(state, state_event)
            second = self._append(state, terminal_event)
            self._put_run(run, insert=False)
        return first, second

    def delete_run(self, run_id: str) -> bool:
        with self._write(run_id, "deleting a run") as conn:
            row = conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                return False
            if not is_terminal(RunState(row[0])):
                raise StorageError(
                    f"run {run_id} is {row[0]}, not finished; only terminal runs can be deleted"
                )
            for table in ("events", "checkpoints", "checkpoint_items", "leases", "ledger_entries"):
                conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM job_checkpoints WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        self._forget(run_id)
        return True

    # ------------------------------------------------------------------ leases
    def acquire_lease(self, run_id: str, owner: str, ttl: float) -> Lease:
        if ttl <= 0:
            raise LeaseError(f"lease ttl must be positive seconds, got {ttl!r}", run_id=run_id)
        with self._write(run_id, "acquiring a lease") as conn:
            now = time.time()
            row = conn.execute(
                "SELECT owner, token, expires_at FROM leases WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is not None and row[0] is not None and row[0] != owner and row[2] > now:
                raise LeaseError(
                    f"run {run_id} is already leased to {row[0]!r} (token {row[1]}) for another "
                    f"{row[2] - now:.1f} s",
                    run_id=run_id,
                )
            token = 1 if row is None else int(row[1]) + 1
            conn.execute(
                "INSERT INTO leases (run_id, owner, token, expires_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner,"
                " token = excluded.token, expires_at = excluded.expires_at",
                (run_id, owner, token, now + ttl),
            )
        return Lease(run_id, owner, token, datetime.fromtimestamp(now + ttl, UTC))

    def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        with self._write(lease.run_id, "renewing a lease") as conn:
            self._check_lease(lease.run_id, lease)
            expires = time.time() + ttl
            conn.execute(
                "UPDATE leases SET expires_at = ? WHERE run_id = ?", (expires, lease.run_id)
            )
        return Lease(lease.run_id, lease.owner, lease.token, datetime.fromtimestamp(expires, UTC))

    def release_lease(self, lease: Lease) -> None:
        with self._write(lease.run_id, "releasing a lease") as conn:
            conn.execute(
                "UPDATE leases SET owner = NULL, expires_at = 0"
                " WHERE run_id = ? AND token = ? AND owner = ?",
                (lease.run_id, lease.token, lease.owner),
            )

    # ------------------------------------------------------------------ reads
    def _events(self, run_id: str) -> list[AgentEvent]:
        rows = self.conn.execute(
            "SELECT run_id, sequence, event_id, event_type, created_at, payload, parent_event_id"
            " FROM events WHERE run_id = ? ORDER BY sequence",
            (run_id,),
        ).fetchall()
        return [
            AgentEvent(
                run_id=row[0],
                sequence=row[1],
                event_id=row[2],
                event_type=EventType(row[3]),
                created_at=datetime.fromisoformat(row[4]),
                payload=json.loads(row[5]),
                parent_event_id=row[6],
            )
            for row in rows
        ]

    def get_events(self, run_id: str) -> list[AgentEvent]:
        with self._read("reading events"):
            return self._events(run_id)

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._read("reading a run"):
            row = self.conn.execute(
                "SELECT record FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        return None if row is None else RunRecord.model_validate_json(row[0])

    def list_runs(self) -> list[RunRecord]:
        with self._read("listing runs"):
            rows = self.conn.execute(
                "SELECT record FROM runs ORDER BY created_at DESC, rowid DESC"
            ).fetchall()
        return [RunRecord.model_validate_json(row[0]) for row in rows]

    def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        with self._read("reading a checkpoint"):
            self.conn.execute("BEGIN")
            try:
                loaded = load_latest(self.conn, run_id)
            finally:
                self.conn.execute("COMMIT")
        return None if loaded is None else loaded[0]

    def is_terminal_run(self, run_id: str) -> bool:
        with self._read("reading a run"):
            row = self.conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                return False
            if is_terminal(RunState(row[0])):
                return True
            last = self.conn.execute(
                "SELECT event_type FROM events WHERE run_id = ? ORDER BY sequence DESC LIMIT 1",
                (run_id,),
            ).fetchone()
        return last is not None and last[0] in _TERMINAL_VALUES

    def database_bytes(self) -> int:
        """Bytes the database occupies (pages in use), for benchmarks and gc reports."""
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        free = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = self.conn.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)


class _ReadGuard:
    """Turns sqlite3 errors raised while reading into StorageError."""

    def __init__(self, path: Path, action: str) -> None:
        self.path = path
        self.action = action

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if isinstance(exc, sqlite3.Error):
            raise StorageError(f"SQLite error while {self.action} in {self.path}: {exc}") from exc
        return False
