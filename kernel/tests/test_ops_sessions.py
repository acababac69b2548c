"""avo.ops.fork_session / rewind_session: branch a session at a turn, take turns back."""

from __future__ import annotations

from typing import Any

import pytest

from avo import AgentRuntime, FakeProvider
from avo.exceptions import SessionError
from avo.ops import fork_session, rewind_session
from avo.sessions import session_store_of
from avo.storage.memory import InMemoryEventStore


async def _three_turns(answer: Any) -> tuple[AgentRuntime, InMemoryEventStore, list[str]]:
    store = InMemoryEventStore()
    provider = FakeProvider([answer("one"), answer("two"), answer("three"), answer("four")])
    runtime = AgentRuntime(provider=provider, event_store=store)
    runs = []
    for task in ("first", "second", "third"):
        runs.append((await runtime.run(task, session_id="s")).run_id)
    return runtime, store, runs


def _said(request: Any) -> list[str]:
    return [str(m.get("content")) for m in request.messages]


async def test_rewinding_drops_the_last_turn_and_the_next_run_continues_before_it(
    answer: Any,
) -> None:
    runtime, store, runs = await _three_turns(answer)
    record = await rewind_session(store, "s", runs[1])
    assert record.run_ids == runs[:2]
    await runtime.run("again", session_id="s")
    seen = _said(runtime.provider.requests[-1])  # type: ignore[attr-defined]
    assert seen == ["first", "one", "second", "two", "again"]
    assert await store.get_run(runs[2]) is not None  # the dropped run stays in the store


async def test_rewinding_before_the_first_turn_empties_the_session(answer: Any) -> None:
    runtime, store, _ = await _three_turns(answer)
    record = await rewind_session(store, "s", None)
    assert record.run_ids == []
    await runtime.run("fresh", session_id="s")
    assert _said(runtime.provider.requests[-1]) == ["fresh"]  # type: ignore[attr-defined]


async def test_forking_at_a_turn_gives_a_session_that_goes_its_own_way(answer: Any) -> None:
    runtime, store, runs = await _three_turns(answer)
    fork = await fork_session(store, "s", runs[0], new_session_id="s-fork")
    assert fork.run_ids == runs[:1] and fork.title.endswith("(branch)")
    await runtime.run("other way", session_id="s-fork")
    assert _said(runtime.provider.requests[-1]) == [  # type: ignore[attr-defined]
        "first",
        "one",
        "other way",
    ]
    original = await session_store_of(store).get_session("s")  # type: ignore[union-attr]
    assert original is not None and original.run_ids == runs


async def test_bad_input_names_the_fix(answer: Any) -> None:
    _, store, _ = await _three_turns(answer)
    with pytest.raises(SessionError, match="no session 'nope'"):
        await rewind_session(store, "nope", None)
    with pytest.raises(SessionError, match="is not part of session 's'"):
        await fork_session(store, "s", "not-a-run")


async def test_a_store_that_cannot_rewind_says_so(answer: Any) -> None:
    class Plain(InMemoryEventStore):
        rewind_session = None  # type: ignore[assignment]

    store = Plain()
    runtime = AgentRuntime(provider=FakeProvider([answer("x")]), event_store=store)
    await runtime.run("t", session_id="s")
    with pytest.raises(SessionError, match="cannot rewind them"):
        await rewind_session(store, "s", None)
