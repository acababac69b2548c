"""Sessions and shaper state in the store conformance suite.

:class:`SessionConformance` is part of
:class:`avo.testing.stores.EventStoreConformance`, so every store that runs the
suite also checks what it does for :mod:`avo.sessions`: the session tests are
skipped for a store that does not implement
:class:`~avo.sessions.SessionStore` (an optional capability); the checkpoint's
``shaper_state`` must round-trip in every store.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from avo.exceptions import SessionError
from avo.models import new_id
from avo.sessions import RewindableSessionStore, SessionRecord, SessionStore
from avo.storage.base import EventStore
from avo.testing.store_values import checkpoint, checkpointed, start_run

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "user", "content": "remember: the code word is ünïcode ☂"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "note", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "note", "content": '{"ok":true}'},
    {"role": "system", "content": 'Summary of 3 earlier messages:\nnested {"x": [1, 2.5]}'},
    {"role": "assistant", "content": "noted"},
]


def _sessions(store: Any) -> SessionStore:
    if not isinstance(store, SessionStore):
        pytest.skip(f"{type(store).__name__} does not keep sessions (optional capability)")
    return store


class SessionConformance:
    """What every SessionStore must do (mixed into EventStoreConformance)."""

    async def settle(self, store: EventStore) -> None:  # overridden by the suite
        """See EventStoreConformance.settle."""

    async def _second(self, location: Any) -> EventStore:  # provided by the suite
        raise NotImplementedError

    async def test_checkpoint_keeps_shaper_state(self, store: EventStore) -> None:
        run_id = await start_run(store)
        state = {"compaction": {"elided": [["c1", 12, 340]], "summary": {"text": "ü", "stop": 9}}}
        first = checkpoint(run_id).model_copy(update={"shaper_state": state})
        await store.save_checkpoint(first, checkpointed(run_id, first))
        loaded = await store.get_latest_checkpoint(run_id)
        assert loaded is not None and loaded.shaper_state == state
        # an unchanged state on the next checkpoint, then a changed one
        second = checkpoint(run_id, next_step=3).model_copy(update={"shaper_state": state})
        await store.save_checkpoint(second, checkpointed(run_id, second))
        changed = {"compaction": {"elided": [], "summary": None}, "other": [1]}
        third = checkpoint(run_id, next_step=4).model_copy(update={"shaper_state": changed})
        await store.save_checkpoint(third, checkpointed(run_id, third))
        loaded = await store.get_latest_checkpoint(run_id)
        assert loaded is not None and loaded.shaper_state == changed

    async def test_session_round_trip(self, store: EventStore) -> None:
        sessions = _sessions(store)
        sid = f"s-{new_id()}"
        created = await sessions.create_session(sid, title="first task")
        assert isinstance(created, SessionRecord)
        assert (created.session_id, created.title, created.run_ids) == (sid, "first task", [])
        assert created.transcript == [] and created.transcript_run_id is None
        fetched = await sessions.get_session(sid)
        assert fetched == created
        assert await sessions.get_session("no-such-session") is None

    async def test_session_ids_are_unique_and_checked(self, store: EventStore) -> None:
        sessions = _sessions(store)
        sid = f"s-{new_id()}"
        await sessions.create_session(sid)
        with pytest.raises(SessionError, match="already exists"):
            await sessions.create_session(sid)
        with pytest.raises(SessionError, match="invalid session id"):
            await sessions.create_session("bad id with spaces")

    async def test_runs_are_kept_in_order(self, store: EventStore) -> None:
        sessions = _sessions(store)
        sid = f"s-{new_id()}"
        await sessions.create_session(sid)
        runs = [new_id() for _ in range(3)]
        for run_id in runs:
            await sessions.add_session_run(sid, run_id)
        again = await sessions.add_session_run(sid, runs[0])  # no duplicate
        assert again.run_ids == runs
        assert again.last_run_id == runs[-1]
        with pytest.raises(SessionError, match="no session"):
            await sessions.add_session_run("missing-session", runs[0])

    async def test_transcript_round_trips(self, store: EventStore) -> None:
        sessions = _sessions(store)
        sid = f"s-{new_id()}"
        await sessions.create_session(sid)
        run_id = new_id()
        await sessions.add_session_run(sid, run_id)
        saved = await sessions.save_session_transcript(sid, run_id, TRANSCRIPT)
        assert saved.transcript == TRANSCRIPT and saved.transcript_run_id == run_id
        fetched = await sessions.get_session(sid)
        assert fetched is not None
        assert fetched.transcript == TRANSCRIPT and fetched.transcript_run_id == run_id
        replacement: list[dict[str, JsonValue]] = [{"role": "user", "content": "shorter"}]
        await sessions.save_session_transcript(sid, run_id, replacement)
        fetched = await sessions.get_session(sid)
        assert fetched is not None and fetched.transcript == replacement
        with pytest.raises(SessionError, match="is not part of session"):
            await sessions.save_session_transcript(sid, "another-run", TRANSCRIPT)
        with pytest.raises(SessionError, match="no session"):
            await sessions.save_session_transcript("missing-session", run_id, TRANSCRIPT)

    async def test_sessions_are_listed_most_recent_first(self, store: EventStore) -> None:
        sessions = _sessions(store)
        older, newer = f"a-{new_id()}", f"b-{new_id()}"
        await sessions.create_session(older)
        await sessions.create_session(newer)
        await sessions.add_session_run(older, new_id())  # touching it makes it the newest
        listed = [s.session_id for s in await sessions.list_sessions()]
        assert listed.index(older) < listed.index(newer)

    async def test_sessions_are_durable(self, store: EventStore, store_location: Any) -> None:
        sessions = _sessions(store)
        sid = f"s-{new_id()}"
        await sessions.create_session(sid, title="kept")
        run_id = new_id()
        await sessions.add_session_run(sid, run_id)
        await sessions.save_session_transcript(sid, run_id, TRANSCRIPT)
        await self.settle(store)
        other = await self._second(store_location)
        try:
            found = await _sessions(other).get_session(sid)
        finally:
            await other.close()
        assert found is not None
        assert (found.title, found.run_ids, found.transcript) == ("kept", [run_id], TRANSCRIPT)

    async def test_a_session_rewinds_to_an_earlier_run(self, store: EventStore) -> None:
        sessions = _sessions(store)
        if not isinstance(sessions, RewindableSessionStore):
            pytest.skip(f"{type(store).__name__} cannot rewind sessions (optional capability)")
        sid = f"s-{new_id()}"
        await sessions.create_session(sid, title="t")
        runs = [new_id() for _ in range(3)]
        for run_id in runs:
            await sessions.add_session_run(sid, run_id)
        await sessions.save_session_transcript(sid, runs[2], TRANSCRIPT)
        earlier: list[dict[str, JsonValue]] = [{"role": "user", "content": "first ☂"}]
        rewound = await sessions.rewind_session(sid, runs[0], earlier)
        assert (rewound.run_ids, rewound.transcript_run_id) == ([runs[0]], runs[0])
        await self.settle(store)
        fetched = await sessions.get_session(sid)
        assert fetched is not None
        assert (fetched.run_ids, fetched.transcript, fetched.title) == ([runs[0]], earlier, "t")
        await sessions.add_session_run(sid, runs[2])  # a dropped run may join again
        emptied = await sessions.rewind_session(sid, None, [])
        assert (emptied.run_ids, emptied.transcript, emptied.transcript_run_id) == ([], [], None)
        with pytest.raises(SessionError, match="is not part of session"):
            await sessions.rewind_session(sid, runs[1], [])
        with pytest.raises(SessionError, match="no session"):
            await sessions.rewind_session("missing-session", None, [])


__all__ = ["TRANSCRIPT", "SessionConformance"]
