"""Both memory stores, on real databases: ranking, recency, dedup, scopes, forget, redaction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from avo.exceptions import MemoryStoreError
from avo.memory import ManagedMemory, MemoryProvider
from avo_memory.records import new_memory_id, short_ids

DAY = 86_400.0
StoreMaker = Callable[..., Any]


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_recall_ranks_by_relevance(make_store: StoreMaker) -> None:
    store = make_store()
    assert isinstance(store, MemoryProvider) and isinstance(store, ManagedMemory)
    await store.remember("The staging API listens on port 8443", session_id="s1")
    await store.remember("Lunch is at noon on Fridays", session_id="s1")
    await store.remember("The production API listens on port 443 behind the proxy", session_id="s")
    await store.remember("Staging deploys need the staging VPN; staging is flaky", session_id="s")
    found = await store.recall("which port does the staging API use?", k=5)
    contents = [r.content for r in found]
    assert contents[0] == "The staging API listens on port 8443"
    assert "Lunch is at noon on Fridays" not in contents
    assert all(r.score is not None and r.score > 0 for r in found)
    assert [r.score for r in found] == sorted([r.score for r in found], reverse=True)
    [lunch] = await store.recall("lunch", k=1)
    assert lunch.memory_id == (await store.recall("noon friday lunch", k=1))[0].memory_id
    assert await store.recall("the and of", k=3) == []  # stopwords only: nothing to look for
    assert await store.recall("", k=3) == []


async def test_recency_breaks_ties_and_can_outweigh_relevance(make_store: StoreMaker) -> None:
    clock = Clock()
    store = make_store(clock=clock, recency_weight=0.9, half_life_days=7)
    await store.remember("deploy target is the blue cluster", session_id="a")
    clock.now += 60 * DAY
    await store.remember("deploy target is the green cluster", session_id="b")
    first = await store.recall("deploy target cluster", k=2)
    assert [r.content for r in first] == [
        "deploy target is the green cluster",
        "deploy target is the blue cluster",
    ]
    # without recency the older one is as good a match: the newer still wins ties
    plain = make_store(clock=clock, recency_weight=0.0)
    ranked = await plain.recall("deploy target blue cluster", k=2)
    assert ranked[0].content == "deploy target is the blue cluster"


async def test_equal_memories_are_merged_not_duplicated(make_store: StoreMaker) -> None:
    clock = Clock()
    store = make_store(clock=clock)
    first = await store.remember("Use  ruff for linting", session_id="a", tags=["style"])
    clock.now += 10
    again = await store.remember("use ruff FOR linting ", session_id="b", tags=["tools"])
    assert again.memory_id == first.memory_id
    assert again.hits == 2 and again.updated_at == first.updated_at + 10
    [only] = await store.list_memories()
    assert only.memory_id == first.memory_id
    assert only.content == "Use  ruff for linting"
    assert set(only.tags) == {"style", "tools"}
    assert await store.count() == 1


async def test_scopes_keep_workspaces_apart_and_user_memories_shared(
    make_store: StoreMaker, tmp_path: Path
) -> None:
    one = make_store(workspace=tmp_path / "one")
    two = make_store(workspace=tmp_path / "two")
    user_a = make_store(scope="user", workspace=tmp_path / "one")
    user_b = make_store(scope="user", workspace=tmp_path / "two")
    await one.remember("project one uses postgres", session_id="s")
    await user_a.remember("the user prefers short answers", session_id="s")
    assert [r.content for r in await one.recall("postgres", k=3)] == ["project one uses postgres"]
    assert await two.recall("postgres", k=3) == []
    assert await two.recall("short answers", k=3) == []
    assert [r.content for r in await user_b.recall("short answers", k=3)] == [
        "the user prefers short answers"
    ]
    assert [r.scope for r in await user_b.list_memories()] == ["user"]
    with pytest.raises(MemoryStoreError, match="no memory"):
        await two.forget([(await one.list_memories())[0].memory_id])


async def test_forget_by_id_and_prefix(
    make_store: StoreMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    a = await store.remember("alpha fact", session_id="s")
    b = await store.remember("beta fact", session_id="s")
    c = await store.remember("gamma fact", session_id="s")
    assert await store.forget([a.memory_id, b.memory_id[:-2]]) == 2
    assert [r.memory_id for r in await store.list_memories()] == [c.memory_id]
    assert await store.recall("alpha", k=3) == []
    with pytest.raises(MemoryStoreError, match="too short"):
        await store.forget(["m0"])
    with pytest.raises(MemoryStoreError, match="no memory 'mzzzzz'"):
        await store.forget(["mzzzzz"])
    made = iter(["mabcd00000000000000001", "mabcd00000000000000002"])
    for module in ("avo_memory.sqlite", "avo_memory.postgres"):
        monkeypatch.setattr(f"{module}.new_memory_id", lambda: next(made))
    await store.remember("delta fact", session_id="s")
    await store.remember("epsilon fact", session_id="s")
    with pytest.raises(MemoryStoreError, match="more than one memory"):
        await store.forget(["mabcd"])  # both new ids start with it
    assert await store.count() == 3


def test_new_ids_are_random_from_the_first_digit_and_list_short() -> None:
    made = [new_memory_id() for _ in range(50)]
    assert len({m[:9] for m in made}) == 50  # 32 random bits each: 1 in ~3 million collide
    shown = short_ids(["mabcdef0123", "mabcdef0199", "m12345678999"])
    assert shown == {
        "mabcdef0123": "mabcdef012",
        "mabcdef0199": "mabcdef019",
        "m12345678999": "m12345678",
    }


async def test_memories_never_keep_secrets(make_store: StoreMaker) -> None:
    store = make_store(environ={"DEPLOY_TOKEN": "tok-very-secret-123"})
    record = await store.remember(
        "deploy with tok-very-secret-123 and Authorization: Bearer abcdef123456", session_id="s"
    )
    assert "tok-very-secret-123" not in record.content
    assert "abcdef123456" not in record.content
    [stored] = await store.list_memories()
    assert stored.content == record.content
    with pytest.raises(MemoryStoreError, match="empty memory"):
        await store.remember("   ", session_id="s")


async def test_search_syntax_in_a_query_is_just_text(make_store: StoreMaker) -> None:
    store = make_store()
    await store.remember('the "quoted" NEAR(word) thing AND more', session_id="s")
    for query in ['"', "NEAR(", "a OR b", "col:value", "*", "word)", "'; DROP TABLE x; --"]:
        await store.recall(query, k=3)  # no syntax error reaches the caller
    assert len(await store.recall("quoted thing", k=3)) == 1


async def test_list_is_newest_first_and_pages(make_store: StoreMaker) -> None:
    clock = Clock()
    store = make_store(clock=clock)
    for index in range(5):
        clock.now += 1
        await store.remember(f"fact number {index}", session_id="s")
    listed = await store.list_memories(limit=2, offset=1)
    assert [r.content for r in listed] == ["fact number 3", "fact number 2"]
    assert listed[0].as_json()["updated_at"].endswith("+00:00")


async def test_sqlite_ranks_by_distinctive_words_and_fills_from_recent_memories(
    tmp_path: Path,
) -> None:
    from avo_memory.settings import SQLiteMemorySettings
    from avo_memory.sqlite import SQLiteMemory

    settings = SQLiteMemorySettings(distinctive_matches=10, recent_window=100)
    store = SQLiteMemory(tmp_path / "m.db", workspace=tmp_path, settings=settings)
    await store.remember("service deploy origin story", session_id="s")  # oldest
    for index in range(120):
        await store.remember(f"service deploy filler number {index}", session_id="s")
    await store.remember("service deploy rollback checklist", session_id="s")
    # 'rollback' is in one memory (distinctive); 'service' and 'deploy' in 122 (common).
    found = await store.recall("how do we roll a service deploy back? rollback", k=5)
    assert found[0].content == "service deploy rollback checklist"
    assert len(found) == 5 and all("service deploy" in r.content for r in found)
    # Common words alone pick among the newest 100 memories: the oldest is not among them.
    common = await store.recall("service deploy", k=200)
    assert 0 < len(common) <= 101
    assert all("origin" not in r.content for r in common)
    # Other forms of a word still count (the index stems; so does the scoring).
    await store.remember("the deployment checklist lives in the wiki", session_id="s")
    plural = await store.recall("where are the deployments checklists?", k=2)
    assert {r.content for r in plural} == {
        "the deployment checklist lives in the wiki",
        "service deploy rollback checklist",
    }
    # A distinctive word finds a memory however old it is.
    assert [r.content for r in await store.recall("origin", k=5)] == ["service deploy origin story"]
    await store.close()
