"""Sessions (:mod:`avo.sessions`) in the avo SQLite file: tables ``sessions`` and ``session_runs``.

:class:`SessionTable` is a side store on its own connection (like the ledger),
creating its two tables on first use; :class:`SQLiteSessions` mixes the async
:class:`~avo.sessions.SessionStore` methods into the event store, running each
call on a worker thread so a locked database never stalls the event loop. A
session's transcript is stored as ASCII JSON (every character escaped), so any
string round-trips, lone surrogates included.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from avo.exceptions import SessionError, StorageError
from avo.models import utc_now
from avo.sessions import SessionRecord, check_session_id
from avo_sqlite._sync import SyncSQLiteStore

_DDL = """
CREATE TABLE IF NOT EXISTS sessions (
    session_key INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    transcript TEXT NOT NULL DEFAULT '[]',
    transcript_run_id TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated_at);
CREATE TABLE IF NOT EXISTS session_runs (
    session_key INTEGER NOT NULL,
    position INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    PRIMARY KEY (session_key, position),
    UNIQUE (session_key, run_id)
) WITHOUT ROWID;
"""
Transcript = list[dict[str, JsonValue]]
"""A session's transcript: the messages its next run starts from."""

_COLUMNS = "session_key, session_id, title, created_at, updated_at, transcript, transcript_run_id"


def _time(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


class SessionTable(SyncSQLiteStore):
    """The sessions of one avo SQLite file (synchronous; see :class:`SQLiteSessions`)."""

    error = StorageError

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._ready = False

    def _ensure(self) -> None:
        if self._ready:
            return
        if self._read_only is None:
            with self._tx("creating the session tables") as conn:
                for statement in _DDL.split(";"):
                    if statement.strip():
                        conn.execute(statement)
        self._ready = True

    def _row(self, conn: sqlite3.Connection, session_id: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = conn.execute(
            f"SELECT {_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return row

    def _record(self, conn: sqlite3.Connection, row: tuple[Any, ...]) -> SessionRecord:
        runs = [
            r[0]
            for r in conn.execute(
                "SELECT run_id FROM session_runs WHERE session_key = ? ORDER BY position", (row[0],)
            )
        ]
        return SessionRecord(
            session_id=row[1],
            title=row[2],
            created_at=datetime.fromisoformat(row[3]),
            updated_at=datetime.fromisoformat(row[4]),
            run_ids=runs,
            transcript=json.loads(row[5]),
            transcript_run_id=row[6],
        )

    def _existing(self, conn: sqlite3.Connection, session_id: str) -> tuple[Any, ...]:
        row = self._row(conn, session_id)
        if row is None:
            raise SessionError(f"no session {session_id!r} in {self.path}", session_id=session_id)
        return row

    def create(self, session_id: str, title: str) -> SessionRecord:
        """Insert an empty session (SessionError if the id exists)."""
        check_session_id(session_id)
        self._ensure()
        now = _time(utc_now())
        with self._tx(f"creating session {session_id}") as conn:
            if self._row(conn, session_id) is not None:
                raise SessionError(f"session {session_id!r} already exists", session_id=session_id)
            conn.execute(
                "INSERT INTO sessions (session_id, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (session_id, title, now, now),
            )
            return self._record(conn, self._existing(conn, session_id))

    def get(self, session_id: str) -> SessionRecord | None:
        """The session, or None."""
        self._ensure()
        with self._lock:
            try:
                row = self._row(self._conn, session_id)
                return None if row is None else self._record(self._conn, row)
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):  # a read-only file made before sessions
                    return None
                raise StorageError(f"SQLite error reading session {session_id}: {exc}") from exc

    def list(self) -> list[SessionRecord]:
        """Every session, most recently updated first."""
        self._ensure()
        with self._lock:
            try:
                rows = self._conn.execute(
                    f"SELECT {_COLUMNS} FROM sessions ORDER BY updated_at DESC, session_key DESC"
                ).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []
                raise StorageError(f"SQLite error listing sessions: {exc}") from exc
            return [self._record(self._conn, row) for row in rows]

    def add_run(self, session_id: str, run_id: str) -> SessionRecord:
        """Append ``run_id`` to the session (a no-op when it is there already)."""
        self._ensure()
        with self._tx(f"adding run {run_id} to session {session_id}") as conn:
            row = self._existing(conn, session_id)
            present = conn.execute(
                "SELECT 1 FROM session_runs WHERE session_key = ? AND run_id = ?", (row[0], run_id)
            ).fetchone()
            if present is None:
                (count,) = conn.execute(
                    "SELECT COUNT(*) FROM session_runs WHERE session_key = ?", (row[0],)
                ).fetchone()
                conn.execute(
                    "INSERT INTO session_runs (session_key, position, run_id) VALUES (?, ?, ?)",
                    (row[0], int(count) + 1, run_id),
                )
                conn.execute(
                    "UPDATE sessions SET updated_at = ? WHERE session_key = ?",
                    (_time(utc_now()), row[0]),
                )
            return self._record(conn, self._existing(conn, session_id))

    def save_transcript(self, session_id: str, run_id: str, messages: Transcript) -> SessionRecord:
        """Replace the transcript the session's next run starts from."""
        self._ensure()
        text = json.dumps(messages, ensure_ascii=True, separators=(",", ":"))
        with self._tx(f"saving the transcript of session {session_id}") as conn:
            row = self._existing(conn, session_id)
            present = conn.execute(
                "SELECT 1 FROM session_runs WHERE session_key = ? AND run_id = ?", (row[0], run_id)
            ).fetchone()
            if present is None:
                raise SessionError(
                    f"run {run_id!r} is not part of session {session_id!r}", session_id=session_id
                )
            conn.execute(
                "UPDATE sessions SET transcript = ?, transcript_run_id = ?, updated_at = ? "
                "WHERE session_key = ?",
                (text, run_id, _time(utc_now()), row[0]),
            )
            return self._record(conn, self._existing(conn, session_id))

    def rewind(self, session_id: str, run_id: str | None, messages: Transcript) -> SessionRecord:
        """End the session at ``run_id`` (None: before its first); next run from ``messages``."""
        self._ensure()
        text = json.dumps(
            messages if run_id is not None else [], ensure_ascii=True, separators=(",", ":")
        )
        with self._tx(f"rewinding session {session_id}") as conn:
            row = self._existing(conn, session_id)
            keep = 0
            if run_id is not None:
                found = conn.execute(
                    "SELECT position FROM session_runs WHERE session_key = ? AND run_id = ?",
                    (row[0], run_id),
                ).fetchone()
                if found is None:
                    raise SessionError(
                        f"run {run_id!r} is not part of session {session_id!r}",
                        session_id=session_id,
                    )
                keep = int(found[0])
            conn.execute(
                "DELETE FROM session_runs WHERE session_key = ? AND position > ?", (row[0], keep)
            )
            conn.execute(
                "UPDATE sessions SET transcript = ?, transcript_run_id = ?, updated_at = ? "
                "WHERE session_key = ?",
                (text, run_id, _time(utc_now()), row[0]),
            )
            return self._record(conn, self._existing(conn, session_id))


class SQLiteSessions:
    """The async :class:`~avo.sessions.SessionStore` methods of ``SQLiteEventStore``."""

    path: Path
    _session_table: SessionTable | None = None
    _session_lock = threading.Lock()

    def _sessions(self) -> SessionTable:
        table = self._session_table
        if table is None:
            with self._session_lock:
                table = self._session_table
                if table is None:
                    table = self._session_table = SessionTable(self.path)
        return table

    def _close_sessions(self) -> None:
        table, self._session_table = self._session_table, None
        if table is not None:
            table.close()

    async def create_session(self, session_id: str, *, title: str = "") -> SessionRecord:
        """Create an empty session (SessionError if the id exists)."""
        return await asyncio.to_thread(lambda: self._sessions().create(session_id, title))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None."""
        return await asyncio.to_thread(lambda: self._sessions().get(session_id))

    async def list_sessions(self) -> list[SessionRecord]:
        """Every session, most recently updated first."""
        return await asyncio.to_thread(lambda: self._sessions().list())

    async def add_session_run(self, session_id: str, run_id: str) -> SessionRecord:
        """Append ``run_id`` to the session's runs."""
        return await asyncio.to_thread(lambda: self._sessions().add_run(session_id, run_id))

    async def save_session_transcript(
        self, session_id: str, run_id: str, messages: list[dict[str, JsonValue]]
    ) -> SessionRecord:
        """Store the transcript the session's next run starts from."""
        return await asyncio.to_thread(
            lambda: self._sessions().save_transcript(session_id, run_id, messages)
        )

    async def rewind_session(
        self, session_id: str, run_id: str | None, messages: Transcript
    ) -> SessionRecord:
        """End the session at ``run_id``; the runs after it leave it (they stay stored)."""
        return await asyncio.to_thread(
            lambda: self._sessions().rewind(session_id, run_id, messages)
        )


__all__ = ["SQLiteSessions", "SessionTable"]
