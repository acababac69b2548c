"""Sessions kept in memory: the :class:`~avo.sessions.SessionStore` of the in-memory store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import JsonValue

from avo.exceptions import SessionError
from avo.models import utc_now

if TYPE_CHECKING:  # imported when a session is first used: the store's import stays light
    from avo.sessions import SessionRecord


class InMemorySessions:
    """A mixin giving an event store in-process sessions (lost with the process)."""

    _sessions: dict[str, SessionRecord]

    def _session_table(self) -> dict[str, SessionRecord]:
        table = getattr(self, "_sessions", None)
        if table is None:
            table = self._sessions = {}
        return table

    def _existing(self, session_id: str) -> SessionRecord:
        record = self._session_table().get(session_id)
        if record is None:
            raise SessionError(f"no session {session_id!r}", session_id=session_id)
        return record

    async def create_session(self, session_id: str, *, title: str = "") -> SessionRecord:
        """Create an empty session (SessionError if the id exists)."""
        from avo.sessions import SessionRecord, check_session_id

        check_session_id(session_id)
        table = self._session_table()
        if session_id in table:
            raise SessionError(f"session {session_id!r} already exists", session_id=session_id)
        now = utc_now()
        record = SessionRecord(session_id=session_id, title=title, created_at=now, updated_at=now)
        table[session_id] = record
        return record.model_copy(deep=True)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None."""
        record = self._session_table().get(session_id)
        return record.model_copy(deep=True) if record is not None else None

    async def list_sessions(self) -> list[SessionRecord]:
        """Every session, most recently updated first."""
        records = sorted(self._session_table().values(), key=lambda r: r.updated_at, reverse=True)
        return [r.model_copy(deep=True) for r in records]

    async def add_session_run(self, session_id: str, run_id: str) -> SessionRecord:
        """Append ``run_id`` to the session (a no-op when it is already there)."""
        record = self._existing(session_id)
        if run_id not in record.run_ids:
            record.run_ids = [*record.run_ids, run_id]
            record.updated_at = utc_now()
        return record.model_copy(deep=True)

    async def save_session_transcript(
        self, session_id: str, run_id: str, messages: list[dict[str, JsonValue]]
    ) -> SessionRecord:
        """Store the transcript the session's next run starts from."""
        record = self._existing(session_id)
        if run_id not in record.run_ids:
            raise SessionError(
                f"run {run_id!r} is not part of session {session_id!r}", session_id=session_id
            )
        record.transcript = [dict(m) for m in messages]
        record.transcript_run_id = run_id
        record.updated_at = utc_now()
        return record.model_copy(deep=True)

    async def rewind_session(
        self, session_id: str, run_id: str | None, messages: list[dict[str, JsonValue]]
    ) -> SessionRecord:
        """End the session at ``run_id`` (None: before its first); next run from ``messages``."""
        record = self._existing(session_id)
        if run_id is not None and run_id not in record.run_ids:
            raise SessionError(
                f"run {run_id!r} is not part of session {session_id!r}", session_id=session_id
            )
        keep = record.run_ids.index(run_id) + 1 if run_id is not None else 0
        record.run_ids = record.run_ids[:keep]
        record.transcript = [dict(m) for m in messages] if run_id is not None else []
        record.transcript_run_id = run_id
        record.updated_at = utc_now()
        return record.model_copy(deep=True)


__all__ = ["InMemorySessions"]
