"""ConversationStore: chat sessions as ordered turns (table ``conversation_turns``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from avo.exceptions import StorageError
from avo.models import utc_now
from avo_sqlite._sync import SyncSQLiteStore

_COLUMNS = "session_id, sequence, role, content, metadata, created_at"


class HistoryError(StorageError):
    """The conversation store failed or was given a bad value (an AvoError)."""


@dataclass
class ConversationTurn:
    """One message of a chat session."""

    session_id: str
    sequence: int
    role: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=utc_now)


class ConversationStore(SyncSQLiteStore):
    """Chat history per session; sequences ascend from 1 per session."""

    error = HistoryError

    def append(
        self,
        session_id: str,
        *,
        role: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> ConversationTurn:
        """Append a turn to ``session_id`` and return it."""
        if not session_id:
            raise HistoryError("session_id must be a non-empty string")
        if not role:
            raise HistoryError(f"session {session_id}: role must be a non-empty string")
        try:
            encoded = json.dumps(metadata or {}, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise HistoryError(f"session {session_id}: metadata is not JSON: {exc}") from exc
        created = utc_now()
        sequence = self._insert_numbered(
            "appending a turn",
            "conversation_turns",
            "session_id",
            {
                "session_id": session_id,
                "role": role,
                "content": content,
                "metadata": encoded,
                "created_at": created.isoformat(),
            },
        )
        return ConversationTurn(session_id, sequence, role, content, json.loads(encoded), created)

    def turns(self, session_id: str, *, limit: int | None = None) -> list[ConversationTurn]:
        """The session's turns in order (the last ``limit`` when given)."""
        if limit is not None and limit < 0:
            raise HistoryError(f"limit must be >= 0, got {limit}")
        rows = self._query(
            "reading turns",
            f"SELECT {_COLUMNS} FROM (SELECT * FROM conversation_turns WHERE session_id = ?"
            " ORDER BY sequence DESC LIMIT ?) ORDER BY sequence",
            (session_id, -1 if limit is None else limit),
        )
        return [_turn(row) for row in rows]

    def sessions(self) -> list[str]:
        """Session ids, most recently active first."""
        rows = self._query(
            "listing sessions",
            "SELECT session_id FROM conversation_turns GROUP BY session_id"
            " ORDER BY MAX(created_at) DESC, session_id",
        )
        return [row[0] for row in rows]

    def last_turn(self, session_id: str) -> ConversationTurn | None:
        """The session's newest turn, or None."""
        turns = self.turns(session_id, limit=1)
        return turns[0] if turns else None

    def truncate(self, session_id: str, *, keep_last: int = 0) -> int:
        """Delete all but the newest ``keep_last`` turns; returns how many were deleted."""
        return self._truncate_keep_last(
            "truncating a session", "conversation_turns", "session_id", session_id, keep_last
        )

    def search_turns(
        self,
        query: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        limit: int = 50,
    ) -> list[ConversationTurn]:
        """Turns whose content contains ``query`` (case-insensitive), newest first."""
        if not query:
            raise HistoryError("search query must be a non-empty string")
        pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sql = f"SELECT {_COLUMNS} FROM conversation_turns WHERE content LIKE ? ESCAPE '\\'"
        params: list[Any] = [pattern]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if role is not None:
            sql += " AND role = ?"
            params.append(role)
        sql += " ORDER BY created_at DESC, sequence DESC LIMIT ?"
        params.append(limit)
        return [_turn(row) for row in self._query("searching turns", sql, tuple(params))]


def _turn(row: tuple) -> ConversationTurn:  # type: ignore[type-arg]
    return ConversationTurn(
        session_id=row[0],
        sequence=int(row[1]),
        role=row[2],
        content=row[3],
        metadata=json.loads(row[4]),
        created_at=datetime.fromisoformat(row[5]),
    )


__all__ = ["ConversationStore", "ConversationTurn", "HistoryError"]
