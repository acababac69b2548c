"""The reads of SQLiteCore (a mixin): events, run heads, the latest checkpoint.

Every read turns sqlite3 errors and undecodable rows into a StorageError
naming the file (see :class:`_ReadGuard`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from avo.events import TERMINAL_EVENT_TYPES, AgentEvent
from avo.exceptions import StorageError
from avo.models import Checkpoint, RunRecord
from avo.state import RunState, is_terminal
from avo_sqlite._checkpoints import load_latest
from avo_sqlite._codec import decode_id, decode_type, from_us, key_range
from avo_sqlite._payloads import decode_payload
from avo_sqlite._schema import BUSY_TIMEOUT_MS


class ReadOps:
    """Reads on SQLiteCore's connection (see ``_core``)."""

    conn: sqlite3.Connection
    path: Path

    def _busy_timeout(self, ms: int) -> None:
        raise NotImplementedError  # SQLiteCore's

    def _key(self, run_id: str, *, refresh: bool = False) -> int | None:
        raise NotImplementedError  # SQLiteCore's

    def _sync_runs(self) -> None:
        raise NotImplementedError  # SQLiteCore's

    def _read(self, action: str) -> Any:
        self._busy_timeout(BUSY_TIMEOUT_MS)  # a read may wait (rarely, in WAL mode)
        return _ReadGuard(self.path, action)

    def _events(self, run_id: str, key: int | None, after: int = 0) -> list[AgentEvent]:
        if key is None:
            return []
        low, high = key_range(key)
        rows = self.conn.execute(
            "SELECT event_key, event_id, event_type, created_us, payload, parent_event_id"
            " FROM events WHERE event_key BETWEEN ? AND ? ORDER BY event_key",
            (low + after + 1 if after > 0 else low, high),  # key = low + sequence
        ).fetchall()
        events = []
        for row in rows:
            kind = decode_type(row[2])
            events.append(
                AgentEvent(
                    run_id=run_id,
                    sequence=int(row[0]) - low,
                    event_id=decode_id(row[1]),
                    event_type=kind,
                    created_at=from_us(int(row[3])),
                    payload=decode_payload(kind, row[4], run_id),
                    parent_event_id=row[5],
                )
            )
        return events

    def get_events(self, run_id: str) -> list[AgentEvent]:
        with self._read("reading events"):
            return self._events(run_id, self._key(run_id, refresh=True))

    def get_events_after(self, run_id: str, after: int) -> list[AgentEvent]:
        with self._read("reading events"):
            return self._events(run_id, self._key(run_id, refresh=True), after)

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._read("reading a run"):
            self._sync_runs()
            row = self.conn.execute(
                "SELECT record FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            return None if row is None else RunRecord.model_validate_json(row[0])

    def list_runs(self) -> list[RunRecord]:
        with self._read("listing runs"):
            self._sync_runs()
            rows = self.conn.execute(
                "SELECT record FROM runs ORDER BY created_at DESC, rowid DESC"
            ).fetchall()
            return [RunRecord.model_validate_json(row[0]) for row in rows]

    def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        with self._read("reading a checkpoint"):
            if self.conn.in_transaction:  # our own buffered writes are visible to us
                key = self._key(run_id, refresh=True)
                loaded = None if key is None else load_latest(self.conn, run_id, key)
            else:
                self.conn.execute("BEGIN")
                try:
                    key = self._key(run_id, refresh=True)
                    loaded = None if key is None else load_latest(self.conn, run_id, key)
                finally:
                    self.conn.execute("COMMIT")
        return None if loaded is None else loaded[0]

    def is_terminal_run(self, run_id: str) -> bool:
        with self._read("reading a run"):
            self._sync_runs()
            row = self.conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                return False
            if is_terminal(RunState(row[0])):
                return True
            low, high = key_range(self._key(run_id, refresh=True) or 0)
            last = self.conn.execute(
                "SELECT event_type FROM events WHERE event_key BETWEEN ? AND ?"
                " ORDER BY event_key DESC LIMIT 1",
                (low, high),
            ).fetchone()
        return last is not None and decode_type(last[0]) in TERMINAL_EVENT_TYPES

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

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if isinstance(exc, sqlite3.Error):
            raise StorageError(f"SQLite error while {self.action} in {self.path}: {exc}") from exc
        if isinstance(exc, UnicodeEncodeError):  # a looked-up id holds a lone surrogate
            raise StorageError(
                f"cannot look up text that is not valid Unicode while {self.action} in "
                f"{self.path} ({exc}); no avo id holds such text"
            ) from exc
        if isinstance(exc, ValueError | KeyError | TypeError):  # incl. pydantic/JSON errors
            raise StorageError(
                f"stored data in {self.path} cannot be read while {self.action} "
                f"({type(exc).__name__}: {exc}); the file may have been written by another "
                "avo-sqlite build or edited by hand"
            ) from exc
