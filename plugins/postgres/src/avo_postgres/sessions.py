"""Sessions (:mod:`avo.sessions`) on PostgreSQL: tables ``avo_sessions`` and ``avo_session_runs``.

A mixin of :class:`~avo_postgres.PostgresEventStore`. The two tables are
created on first use (``CREATE TABLE IF NOT EXISTS`` under a transaction-level
advisory lock, so concurrent first uses do not race), in the store's schema.
Runs are appended under a row lock on the session, so two processes adding
runs to one session number them without gaps or duplicates. A transcript is
stored as ASCII JSON text: every string round-trips exactly.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from pydantic import JsonValue

from avo.exceptions import SessionError
from avo.models import utc_now
from avo.sessions import SessionRecord, check_session_id

_T = TypeVar("_T")
_LOCK_KEY = 0x61766F53  # "avoS": serialises the one-time table creation

_DDL = """
CREATE TABLE IF NOT EXISTS avo_sessions (
    session_key bigserial PRIMARY KEY,
    session_id text NOT NULL UNIQUE,
    title text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    transcript text NOT NULL DEFAULT '[]',
    transcript_run_id text
);
CREATE INDEX IF NOT EXISTS avo_sessions_by_updated ON avo_sessions (updated_at);
CREATE TABLE IF NOT EXISTS avo_session_runs (
    session_key bigint NOT NULL REFERENCES avo_sessions (session_key) ON DELETE CASCADE,
    position integer NOT NULL,
    run_id text NOT NULL,
    PRIMARY KEY (session_key, position),
    UNIQUE (session_key, run_id)
);
"""
_COLUMNS = "session_key, session_id, title, created_at, updated_at, transcript, transcript_run_id"


class PostgresSessions:
    """The async :class:`~avo.sessions.SessionStore` methods of ``PostgresEventStore``."""

    _sessions_ready: bool = False

    def _transaction(  # provided by PostgresEventStore
        self, action: str, isolation: str | None = None
    ) -> AbstractAsyncContextManager[Any]:
        raise NotImplementedError

    async def _read(self, action: str, query: Callable[[Any], Awaitable[_T]]) -> _T:
        raise NotImplementedError  # provided by PostgresEventStore

    async def _ensure_sessions(self) -> None:
        if self._sessions_ready:
            return
        async with self._transaction("creating the session tables") as conn:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            await conn.execute(_DDL)
        self._sessions_ready = True

    @staticmethod
    async def _record(conn: Any, row: Any) -> SessionRecord:
        runs = await conn.fetch(
            "SELECT run_id FROM avo_session_runs WHERE session_key = $1 ORDER BY position",
            row["session_key"],
        )
        return SessionRecord(
            session_id=row["session_id"],
            title=row["title"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            run_ids=[r["run_id"] for r in runs],
            transcript=json.loads(row["transcript"]),
            transcript_run_id=row["transcript_run_id"],
        )

    @staticmethod
    async def _locked(conn: Any, session_id: str) -> Any:
        row = await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM avo_sessions WHERE session_id = $1 FOR UPDATE", session_id
        )
        if row is None:
            raise SessionError(f"no session {session_id!r}", session_id=session_id)
        return row

    async def create_session(self, session_id: str, *, title: str = "") -> SessionRecord:
        """Create an empty session (SessionError if the id exists)."""
        check_session_id(session_id)
        await self._ensure_sessions()
        now = utc_now()
        async with self._transaction(f"creating session {session_id}") as conn:
            row = await conn.fetchrow(
                "INSERT INTO avo_sessions (session_id, title, created_at, updated_at) "
                f"VALUES ($1, $2, $3, $3) ON CONFLICT (session_id) DO NOTHING RETURNING {_COLUMNS}",
                session_id,
                title,
                now,
            )
            if row is None:
                raise SessionError(f"session {session_id!r} already exists", session_id=session_id)
            return await self._record(conn, row)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None."""
        await self._ensure_sessions()

        async def query(conn: Any) -> SessionRecord | None:
            row = await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM avo_sessions WHERE session_id = $1", session_id
            )
            return None if row is None else await self._record(conn, row)

        return await self._read(f"reading session {session_id}", query)

    async def list_sessions(self) -> list[SessionRecord]:
        """Every session, most recently updated first."""
        await self._ensure_sessions()

        async def query(conn: Any) -> list[SessionRecord]:
            rows = await conn.fetch(
                f"SELECT {_COLUMNS} FROM avo_sessions ORDER BY updated_at DESC, session_key DESC"
            )
            return [await self._record(conn, row) for row in rows]

        return await self._read("listing sessions", query)

    async def add_session_run(self, session_id: str, run_id: str) -> SessionRecord:
        """Append ``run_id`` to the session (a no-op when it is there already)."""
        await self._ensure_sessions()
        async with self._transaction(f"adding run {run_id} to session {session_id}") as conn:
            row = await self._locked(conn, session_id)
            key = row["session_key"]
            present = await conn.fetchval(
                "SELECT 1 FROM avo_session_runs WHERE session_key = $1 AND run_id = $2", key, run_id
            )
            if present is None:
                await conn.execute(
                    "INSERT INTO avo_session_runs (session_key, position, run_id) "
                    "SELECT $1, COALESCE(MAX(position), 0) + 1, $2 "
                    "FROM avo_session_runs WHERE session_key = $1",
                    key,
                    run_id,
                )
                row = await conn.fetchrow(
                    f"UPDATE avo_sessions SET updated_at = $2 WHERE session_key = $1 "
                    f"RETURNING {_COLUMNS}",
                    key,
                    utc_now(),
                )
            return await self._record(conn, row)

    async def save_session_transcript(
        self, session_id: str, run_id: str, messages: list[dict[str, JsonValue]]
    ) -> SessionRecord:
        """Store the transcript the session's next run starts from."""
        await self._ensure_sessions()
        text = json.dumps(messages, ensure_ascii=True, separators=(",", ":"))
        async with self._transaction(f"saving the transcript of session {session_id}") as conn:
            row = await self._locked(conn, session_id)
            present = await conn.fetchval(
                "SELECT 1 FROM avo_session_runs WHERE session_key = $1 AND run_id = $2",
                row["session_key"],
                run_id,
            )
            if present is None:
                raise SessionError(
                    f"run {run_id!r} is not part of session {session_id!r}", session_id=session_id
                )
            row = await conn.fetchrow(
                "UPDATE avo_sessions SET transcript = $2, transcript_run_id = $3, updated_at = $4 "
                f"WHERE session_key = $1 RETURNING {_COLUMNS}",
                row["session_key"],
                text,
                run_id,
                utc_now(),
            )
            return await self._record(conn, row)

    async def rewind_session(
        self, session_id: str, run_id: str | None, messages: list[dict[str, JsonValue]]
    ) -> SessionRecord:
        """End the session at ``run_id`` (None: before its first run); next run from ``messages``.

        The runs after it leave the session; their runs and events stay in the store.
        """
        await self._ensure_sessions()
        text = json.dumps(
            messages if run_id is not None else [], ensure_ascii=True, separators=(",", ":")
        )
        async with self._transaction(f"rewinding session {session_id}") as conn:
            row = await self._locked(conn, session_id)
            key = row["session_key"]
            keep = 0
            if run_id is not None:
                position = await conn.fetchval(
                    "SELECT position FROM avo_session_runs WHERE session_key = $1 AND run_id = $2",
                    key,
                    run_id,
                )
                if position is None:
                    raise SessionError(
                        f"run {run_id!r} is not part of session {session_id!r}",
                        session_id=session_id,
                    )
                keep = int(position)
            await conn.execute(
                "DELETE FROM avo_session_runs WHERE session_key = $1 AND position > $2", key, keep
            )
            row = await conn.fetchrow(
                "UPDATE avo_sessions SET transcript = $2, transcript_run_id = $3, updated_at = $4 "
                f"WHERE session_key = $1 RETURNING {_COLUMNS}",
                key,
                text,
                run_id,
                utc_now(),
            )
            return await self._record(conn, row)


__all__ = ["PostgresSessions"]
