"""Sessions: conversations that continue across runs.

``runtime.run(task, session_id="s1")`` starts a new run in session ``s1``:
the run begins with the transcript the session's previous run ended with (as
its context policy left it: compacted, with elided tool output replaced by
pointers the ``recall`` tool follows), then the new task. Each run keeps its
own event log; the session only records which runs it holds, in order, and
the transcript the next run starts from.

Sessions are kept by the event store: a store offers them by implementing
:class:`SessionStore` (the in-memory store, SQLite and PostgreSQL do). Its
conformance suite is :class:`avo.testing.sessions.SessionStoreConformance`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import Field, JsonValue

from avo.exceptions import SessionError
from avo.models import AvoModel, utc_now

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
TITLE_CHARS = 80


class SessionRecord(AvoModel):
    """A session: its runs in order and the transcript the next run starts from.

    ``transcript`` is what the session's last finished run ended with (as its
    context policy shaped it) and ``transcript_run_id`` that run; when the last
    run ended without saving one (its process died), the runtime falls back to
    that run's latest checkpoint.
    """

    session_id: str = Field(min_length=1)
    title: str = ""
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
    run_ids: list[str] = Field(default_factory=list)
    transcript: list[dict[str, JsonValue]] = Field(default_factory=list)
    transcript_run_id: str | None = None

    @property
    def last_run_id(self) -> str | None:
        """The newest run of the session, or None."""
        return self.run_ids[-1] if self.run_ids else None


@runtime_checkable
class SessionStore(Protocol):
    """What a store implements to keep sessions (all methods async).

    - ``create_session`` refuses an id that exists (SessionError);
    - ``add_session_run`` appends a run id (SessionError for an unknown session;
      adding the same run twice is a no-op);
    - ``save_session_transcript`` replaces the transcript and records which run
      it came from (SessionError for an unknown session or a run not in it);
    - ``list_sessions`` returns every session, most recently updated first.
    """

    async def create_session(self, session_id: str, *, title: str = "") -> SessionRecord:
        """Create an empty session."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None."""
        ...

    async def list_sessions(self) -> list[SessionRecord]:
        """Every session, most recently updated first."""
        ...

    async def add_session_run(self, session_id: str, run_id: str) -> SessionRecord:
        """Append ``run_id`` to the session's runs."""
        ...

    async def save_session_transcript(
        self, session_id: str, run_id: str, messages: list[dict[str, JsonValue]]
    ) -> SessionRecord:
        """Store the transcript the session's next run starts from."""
        ...


@runtime_checkable
class RewindableSessionStore(SessionStore, Protocol):
    """A session store that can also take turns back (``/undo``; see :mod:`avo.ops.sessions`).

    ``rewind_session(session_id, run_id, messages)``: the session now ends at
    ``run_id`` (one of its runs; None: before its first) and its next run
    starts from ``messages``. The runs after it leave the session but stay in
    the store with their events. SessionError for an unknown session or a run
    not in it. Optional: a store without it keeps sessions but cannot rewind.
    """

    async def rewind_session(
        self, session_id: str, run_id: str | None, messages: list[dict[str, JsonValue]]
    ) -> SessionRecord:
        """End the session at ``run_id``; the next run starts from ``messages``."""
        ...


def check_session_id(session_id: str) -> str:
    """Return ``session_id`` or raise SessionError describing a valid one."""
    if not isinstance(session_id, str) or not SESSION_ID.match(session_id):
        raise SessionError(
            f"invalid session id {session_id!r}: use 1-128 letters, digits, '.', '_', ':' "
            "or '-', starting with a letter or digit",
            session_id=str(session_id),
        )
    return session_id


def title_of(task: str) -> str:
    """A session title from its first task: the first line, shortened."""
    line = task.strip().splitlines()[0] if task.strip() else ""
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def session_store_of(store: Any) -> SessionStore | None:
    """The session store behind an event store (the store itself, or the one it wraps)."""
    seen = 0
    while store is not None and seen < 4:
        if isinstance(store, SessionStore):
            return store
        store = getattr(store, "store", None)  # a fenced view wraps the real store
        seen += 1
    return None


def require_session_store(store: Any) -> SessionStore:
    """Like :func:`session_store_of`, but a SessionError naming the store when it has none."""
    found = session_store_of(store)
    if found is None:
        raise SessionError(
            f"the event store {type(store).__name__} does not keep sessions; use the sqlite, "
            "postgres or memory store (or one that implements avo.sessions.SessionStore)"
        )
    return found


__all__ = [
    "SESSION_ID",
    "RewindableSessionStore",
    "SessionRecord",
    "SessionStore",
    "check_session_id",
    "require_session_store",
    "session_store_of",
    "title_of",
]
