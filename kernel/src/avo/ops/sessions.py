"""Session operations a front end offers: fork a session at a turn, take turns back.

- :func:`fork_session` copies a session's first turns into a new session
  (``/branch``): both go on independently from there. It needs only the
  :class:`~avo.sessions.SessionStore` methods every session store has.
- :func:`rewind_session` ends a session at an earlier turn (``/undo``): the
  turns after it leave the session but keep their runs and events (nothing
  in the event log is changed or removed); the next turn continues from the
  transcript that turn ended with. The store must implement
  :class:`~avo.sessions.RewindableSessionStore`.

A turn's transcript is the one the session saved for it when it was the last
turn, else the latest checkpoint of its run (what the run had seen and done).
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from avo.exceptions import SessionError
from avo.models import new_id
from avo.sessions import (
    RewindableSessionStore,
    SessionRecord,
    check_session_id,
    require_session_store,
)
from avo.state import is_terminal


async def _record(sessions: Any, session_id: str) -> SessionRecord:
    record: SessionRecord | None = await sessions.get_session(session_id)
    if record is None:
        raise SessionError(f"no session {session_id!r} in this store", session_id=session_id)
    return record


def _position(record: SessionRecord, run_id: str) -> int:
    if run_id not in record.run_ids:
        raise SessionError(
            f"run {run_id!r} is not part of session {record.session_id!r}",
            session_id=record.session_id,
        )
    return record.run_ids.index(run_id)


async def transcript_after(
    store: Any, record: SessionRecord, run_id: str
) -> list[dict[str, JsonValue]]:
    """The transcript the session had after its run ``run_id`` (leading system messages dropped)."""
    if record.transcript_run_id == run_id:
        messages = list(record.transcript)
    else:
        checkpoint = await store.get_latest_checkpoint(run_id)
        messages = list(checkpoint.messages) if checkpoint is not None else []
    while messages and messages[0].get("role") == "system":
        messages.pop(0)
    return messages


async def fork_session(
    store: Any,
    session_id: str,
    run_id: str,
    *,
    new_session_id: str | None = None,
    title: str | None = None,
) -> SessionRecord:
    """A new session holding ``session_id``'s turns up to and including ``run_id``."""
    sessions = require_session_store(store)
    record = await _record(sessions, session_id)
    position = _position(record, run_id)
    run = await store.get_run(run_id)
    if run is None or not is_terminal(run.state):
        state = run.state.value if run is not None else "missing"
        raise SessionError(
            f"run {run_id} is {state}: a session forks at a finished turn (resume or cancel it)",
            session_id=session_id,
        )
    messages = await transcript_after(store, record, run_id)
    fork_id = check_session_id(new_session_id or new_id())
    await sessions.create_session(fork_id, title=title or f"{record.title} (branch)".strip())
    for earlier in record.run_ids[: position + 1]:
        await sessions.add_session_run(fork_id, earlier)
    return await sessions.save_session_transcript(fork_id, run_id, messages)


async def rewind_session(store: Any, session_id: str, run_id: str | None) -> SessionRecord:
    """End ``session_id`` at its run ``run_id`` (None: before its first run)."""
    sessions = require_session_store(store)
    if not isinstance(sessions, RewindableSessionStore):
        raise SessionError(
            f"the event store {type(store).__name__} keeps sessions but cannot rewind them; "
            "use the sqlite, postgres or memory store (or implement "
            "avo.sessions.RewindableSessionStore)",
            session_id=session_id,
        )
    record = await _record(sessions, session_id)
    if run_id is None:
        return await sessions.rewind_session(session_id, None, [])
    _position(record, run_id)
    messages = await transcript_after(store, record, run_id)
    return await sessions.rewind_session(session_id, run_id, messages)


__all__ = ["fork_session", "rewind_session", "transcript_after"]
