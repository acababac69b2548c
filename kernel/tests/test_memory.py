"""Memory seam: MemoryProvider, LetheMemoryAdapter, the recall message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from avo.exceptions import ConfigError
from avo.memory import (
    InMemoryMemoryStore,
    LetheMemoryAdapter,
    MemoryProvider,
    format_memories,
    memory_message,
)
from avo.models import ModelResponse
from avo.policies import LoopPolicy
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime


@dataclass
class LetheLikeRecord:
    content: str
    score: float = 1.0


class SyncLetheStore:
    """Shaped like Lethe's MemoryStore: synchronous recall/remember with records."""

    def __init__(self, records: list[Any]) -> None:
        self.records = records
        self.recall_calls: list[tuple[str, int]] = []
        self.remembered: list[tuple[str, str]] = []

    def recall(self, query: str, *, k: int = 5) -> list[Any]:
        self.recall_calls.append((query, k))
        return self.records[:k]

    def remember(self, content: str, *, session_id: str, tags: list[str] | None = None) -> Any:
        self.remembered.append((content, session_id))
        return LetheLikeRecord(content)


def test_recall_text_from_a_sync_store() -> None:
    store = SyncLetheStore(
        [LetheLikeRecord("uses tabs"), {"content": "prefers pytest"}, "plain string", ""]
    )
    adapter = LetheMemoryAdapter(store, recall_k=3)
    assert adapter.recall_text("style?") == ["uses tabs", "prefers pytest", "plain string"]
    assert store.recall_calls == [("style?", 3)]


def test_recall_text_bounds_each_memory() -> None:
    store = SyncLetheStore([LetheLikeRecord("x" * 50)])
    adapter = LetheMemoryAdapter(store, max_chars=10)
    result = adapter.recall_text("q")
    assert result == ["x" * 9 + "…"]


def test_recall_text_handles_none_and_single_record() -> None:
    class OddStore(SyncLetheStore):
        def recall(self, query: str, *, k: int = 5) -> Any:
            return None if query == "none" else LetheLikeRecord("only one")

    adapter = LetheMemoryAdapter(OddStore([]))
    assert adapter.recall_text("none") == []
    assert adapter.recall_text("one") == ["only one"]


async def test_async_store_gives_an_awaitable() -> None:
    store = InMemoryMemoryStore()
    await store.remember("The repo uses ruff for linting", session_id="s1")
    await store.remember("Deploys happen on Fridays", session_id="s1")
    await store.remember("ruff line length is 100", session_id="s2")
    adapter = LetheMemoryAdapter(store, recall_k=2)
    pending = adapter.recall_text("how is ruff configured, line length?")
    assert not isinstance(pending, list)
    assert await pending == ["ruff line length is 100", "The repo uses ruff for linting"]
    assert await adapter.arecall_text("deploys fridays") == ["Deploys happen on Fridays"]
    assert await adapter.arecall_text("unrelated") == []


async def test_arecall_text_with_a_sync_store() -> None:
    adapter = LetheMemoryAdapter(SyncLetheStore(["a"]))
    assert await adapter.arecall_text("q") == ["a"]


async def test_remember_output_sync_and_async() -> None:
    sync_store = SyncLetheStore([])
    adapter = LetheMemoryAdapter(sync_store)
    assert adapter.remember_output("   ", session_id="s") is None
    adapter.remember_output("final answer", session_id="s")
    assert sync_store.remembered == [("final answer", "s")]

    async_store = InMemoryMemoryStore()
    async_adapter = LetheMemoryAdapter(async_store)
    record = await async_adapter.aremember_output("done it", session_id="s9")
    assert record is async_store.records[0]
    assert async_store.records[0].session_id == "s9"
    assert await async_adapter.aremember_output("", session_id="s9") is None
    assert len(async_store.records) == 1


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ConfigError, match="recall_k must be positive, got 0"):
        LetheMemoryAdapter(SyncLetheStore([]), recall_k=0)
    with pytest.raises(ConfigError, match="max_chars must be positive, got -1"):
        LetheMemoryAdapter(SyncLetheStore([]), max_chars=-1)
    with pytest.raises(ConfigError, match="object has no recall"):
        LetheMemoryAdapter(object())


def test_in_memory_store_is_a_memory_provider() -> None:
    assert isinstance(InMemoryMemoryStore(), MemoryProvider)
    assert not isinstance(object(), MemoryProvider)


def test_format_memories() -> None:
    assert format_memories([]) is None
    assert format_memories(["  ", ""]) is None
    assert format_memories(["a", " b "]) == "Relevant memories:\n- a\n- b"


async def test_memory_message_for_sync_and_async_adapters() -> None:
    sync_adapter = LetheMemoryAdapter(SyncLetheStore(["tabs"]))
    assert await memory_message(sync_adapter, "q") == {
        "role": "system",
        "content": "Relevant memories:\n- tabs",
    }
    store = InMemoryMemoryStore()
    await store.remember("tabs not spaces", session_id="s")
    assert await memory_message(LetheMemoryAdapter(store), "tabs") == {
        "role": "system",
        "content": "Relevant memories:\n- tabs not spaces",
    }
    assert await memory_message(LetheMemoryAdapter(store), "nothing matches") is None


@pytest.mark.parametrize("use_async_store", [False, True])
async def test_runtime_injects_relevant_memories(use_async_store: bool) -> None:
    if use_async_store:
        store: Any = InMemoryMemoryStore()
        await store.remember("The user prefers short answers", session_id="old")
    else:
        store = SyncLetheStore([LetheLikeRecord("The user prefers short answers")])
    provider = FakeProvider([ModelResponse(content="done")])
    runtime = AgentRuntime(
        provider=provider,
        tools=[],
        policy=LoopPolicy(max_steps=3),
        memory=LetheMemoryAdapter(store),
    )
    result = await runtime.run("answer the user, short answers please")
    assert result.status.value == "completed"
    messages = provider.requests[0].messages
    memory_messages = [m for m in messages if m["role"] == "system"]
    assert memory_messages == [
        {"role": "system", "content": "Relevant memories:\n- The user prefers short answers"}
    ]
    # The memory precedes the user's task.
    assert messages[-1]["role"] == "user"
    assert messages.index(memory_messages[0]) < messages.index(messages[-1])
