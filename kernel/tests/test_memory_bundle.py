"""Memory on the request seam: recall once per run, write-back, the remember tool, config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo._builtins import fake_provider, memory_store
from avo.compose import compose
from avo.embeddings import Embedder, cosine, hashing_embedding
from avo.events import EventType
from avo.exceptions import ConfigError, MemoryStoreError, ProviderError
from avo.memory import InMemoryMemoryStore, LetheMemoryAdapter
from avo.memory_bundle import MemoryBundle
from avo.models import ModelResponse, ToolCall
from avo.plugins import MemorySpec, provides
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.storage.memory import InMemoryEventStore
from avo.testing import plugin_manager
from avo.tools import FunctionTool

MEMORY_TEXT = "Relevant memories:\n- The staging API listens on port 8443"


async def _shaped(events: InMemoryEventStore, run_id: str) -> list[Any]:
    return [e for e in await events.get_events(run_id) if e.event_type is EventType.REQUEST_SHAPED]


class CountingStore(InMemoryMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    async def recall(self, query: str, *, k: int = 5) -> list[Any]:
        self.queries.append(query)
        return await super().recall(query, k=k)


async def _store_with_port() -> CountingStore:
    store = CountingStore()
    await store.remember("The staging API listens on port 8443", session_id="old")
    return store


async def test_recall_goes_through_the_seam_not_the_transcript() -> None:
    store = await _store_with_port()
    provider = FakeProvider([ModelResponse(content="8443")])
    events = InMemoryEventStore()
    runtime = AgentRuntime(provider=provider, event_store=events, memory=store)
    result = await runtime.run("which port does the staging API use?", system_prompt="Be brief.")
    assert result.output == "8443"
    sent = provider.requests[0].messages
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[1] == {"role": "system", "content": MEMORY_TEXT}
    assert sent[-1]["role"] == "user"
    checkpoint = await events.get_latest_checkpoint(result.run_id)
    assert checkpoint is not None
    assert all("Relevant memories" not in str(m.get("content")) for m in checkpoint.messages)
    assert checkpoint.shaper_state["memory"]["memories"] == ["The staging API listens on port 8443"]
    shaped = await _shaped(events, result.run_id)
    entry = shaped[0].payload["shapers"][0]
    assert entry["name"] == "memory"
    assert entry["shaping"]["note"] == {"memories": 1}
    assert store.queries == ["which port does the staging API use?"]


async def test_every_call_of_a_run_sees_the_same_memories_recalled_once(
    tmp_path: Path,
) -> None:
    store = await _store_with_port()
    echo = FunctionTool(
        name="echo",
        description="echo",
        arguments_model=_Text,
        function=lambda args: args.text,
        run_in_thread=False,
    )
    provider = FakeProvider(
        [
            ModelResponse(tool_call=ToolCall(name="echo", arguments={"text": "hi"})),
            ModelResponse(content="done"),
        ]
    )
    runtime = AgentRuntime(provider=provider, tools=[echo], memory=store)
    await runtime.run("staging API port please")
    assert [r.messages[0]["content"] for r in provider.requests] == [MEMORY_TEXT, MEMORY_TEXT]
    assert len(store.queries) == 1


class _Text(BaseModel):
    text: str


async def test_a_resumed_run_keeps_the_memories_it_recalled() -> None:
    store = await _store_with_port()
    ask = FunctionTool(
        name="ask",
        description="ask the user",
        arguments_model=_Text,
        function=lambda args: "",
        asks_human=True,
    )
    events = InMemoryEventStore()
    script = [
        ModelResponse(tool_call=ToolCall(name="ask", arguments={"text": "?"})),
        ModelResponse(content="8443"),
    ]
    runtime = AgentRuntime(
        provider=FakeProvider(script), tools=[ask], event_store=events, memory=store
    )
    paused = await runtime.run("staging API port please")
    assert paused.status.value == "paused"
    # the memory changes in between: the resumed run still sees what it recalled
    store.records.clear()
    await store.remember("The staging API moved to port 9000", session_id="later")
    call_id = next(
        e.payload["tool_call_id"]
        for e in await events.get_events(paused.run_id)
        if e.event_type is EventType.TOOL_APPROVAL_REQUESTED
    )
    second = FakeProvider(script)  # a new process: its script position comes from the checkpoint
    again = AgentRuntime(provider=second, tools=[ask], event_store=events, memory=store)
    result = await again.resume(paused.run_id, answers={call_id: "yes"})
    assert result.output == "8443"
    assert second.requests[-1].messages[0] == {"role": "system", "content": MEMORY_TEXT}
    assert len(store.queries) == 1


async def test_a_failing_store_does_not_fail_the_run() -> None:
    class Broken(InMemoryMemoryStore):
        async def recall(self, query: str, *, k: int = 5) -> list[Any]:
            raise OSError("disk on fire")

    provider = FakeProvider([ModelResponse(content="ok")])
    events = InMemoryEventStore()
    result = await AgentRuntime(provider=provider, event_store=events, memory=Broken()).run("hi")
    assert result.status.value == "completed"
    assert all(m["role"] != "system" for m in provider.requests[0].messages)
    shaped = await _shaped(events, result.run_id)
    note = shaped[0].payload["shapers"][0]["shaping"]["note"]
    assert note == {"memories": 0, "memory_error": "OSError: disk on fire"}


async def test_final_answers_are_written_back_redacted() -> None:
    store = InMemoryMemoryStore()
    secret = "hunter2-very-secret"
    bundle = MemoryBundle(store, write=["final_answer"])
    provider = FakeProvider([ModelResponse(content=f"Port 8443; the password is {secret}")])
    runtime = AgentRuntime(provider=provider, memory=bundle, environ={"STAGING_PASSWORD": secret})
    result = await runtime.run("which port?")
    assert result.status.value == "completed"
    [record] = store.records
    assert record.content == "Q: which port?\nA: Port 8443; the password is ***"
    assert record.tags == ("final_answer",)
    assert record.session_id == result.run_id


async def test_failed_runs_and_short_answers_are_not_written() -> None:
    store = InMemoryMemoryStore()
    failing = FakeProvider([ProviderError("down", retryable=False)])
    await AgentRuntime(provider=failing, memory=MemoryBundle(store, write=["final_answer"])).run(
        "x"
    )
    short = FakeProvider([ModelResponse(content="ok")])
    bundle = MemoryBundle(store, write=["final_answer"], min_answer_chars=5)
    await AgentRuntime(provider=short, memory=bundle).run("y")
    assert store.records == []


async def test_the_remember_tool_writes_immediately_and_redacts() -> None:
    store = InMemoryMemoryStore()
    bundle = MemoryBundle(store, write=["remember"], recall_k=0)
    provider = FakeProvider(
        [
            ModelResponse(
                tool_call=ToolCall(
                    name="remember",
                    arguments={"content": "Deploy key is sk-abcdefghijklmnop1234", "tags": ["ops"]},
                )
            ),
            ModelResponse(content="noted"),
        ]
    )
    runtime = AgentRuntime(provider=provider, memory=bundle)
    result = await runtime.run("note the deploy key", session_id=None)
    assert result.output == "noted"
    [record] = store.records
    assert record.content == "Deploy key is ***"
    assert record.tags == ("remember", "ops")
    tool_names = [t.name for t in provider.requests[0].tools]
    assert "remember" in tool_names
    assert runtime.tools.names() == []  # the tool exists only inside the run


def test_memory_bundle_refuses_bad_settings() -> None:
    with pytest.raises(ConfigError, match="unknown memory write mode 'everything'"):
        MemoryBundle(InMemoryMemoryStore(), write=["everything"])
    with pytest.raises(ConfigError, match="got -1"):
        MemoryBundle(InMemoryMemoryStore(), recall_k=-1)


async def test_lethe_adapter_and_a_recall_text_object_still_work() -> None:
    store = await _store_with_port()
    provider = FakeProvider([ModelResponse(content="a")])
    await AgentRuntime(provider=provider, memory=LetheMemoryAdapter(store, recall_k=1)).run(
        "staging port"
    )
    assert provider.requests[0].messages[0]["content"] == MEMORY_TEXT

    class OnlyRecallText:
        def recall_text(self, query: str) -> list[str]:
            return ["from a duck"]

    provider = FakeProvider([ModelResponse(content="b")])
    await AgentRuntime(provider=provider, memory=OnlyRecallText()).run("anything")
    assert provider.requests[0].messages[0]["content"] == "Relevant memories:\n- from a duck"


# ------------------------------------------------------------------ embeddings


async def test_embedder_checks_what_a_provider_returns() -> None:
    embedder = Embedder(FakeProvider([]), "fake-embed", 64, name="fake")
    first, second, other = await embedder.embed(
        ["staging api port", "the staging api port", "lunch menu"]
    )
    assert len(first) == 64
    assert cosine(first, second) > cosine(first, other)
    assert hashing_embedding("Same words") == hashing_embedding("same WORDS")

    class Short:
        async def embed(self, texts: list[str], *, model: str) -> list[list[float]]:
            return [[1.0, 2.0] for _ in texts]

    with pytest.raises(MemoryStoreError, match="vector of 2 dimensions; it declares 64"):
        await Embedder(Short(), "tiny", 64).embed(["x"])
    with pytest.raises(MemoryStoreError, match="has no embed"):
        Embedder(object(), "m", 3)
    with pytest.raises(ProviderError, match="no embedding model 'nope'"):
        await FakeProvider([]).embed(["x"], model="nope")


# ------------------------------------------------------------------ [memory] in avo.toml


class _Made:
    def __init__(self, settings: dict[str, Any], **options: Any) -> None:
        self.settings = settings
        self.options = options
        self.store = InMemoryMemoryStore()
        self.closed = False

    async def recall(self, query: str, *, k: int = 5) -> list[Any]:
        return await self.store.recall(query, k=k)

    async def remember(self, content: str, *, session_id: str, tags: Any = None) -> Any:
        return await self.store.remember(content, session_id=session_id, tags=tags)

    async def close(self) -> None:
        self.closed = True


def _memory_plugin(*, embeddings: bool = False) -> Any:
    def factory(
        settings: dict[str, Any], *, environ: Any, workspace: str, scope: str, embedder: Any
    ) -> _Made:
        return _Made(settings, workspace=workspace, scope=scope, embedder=embedder)

    return provides(MemorySpec(name="notes", factory=factory, embeddings=embeddings))


def _config(tmp_path: Path, memory: str) -> Path:
    path = tmp_path / "avo.toml"
    path.write_text(
        '[provider]\nname = "fake"\n[provider.settings]\nscript = [{content = "Port 8443"}]\n'
        '[store]\nlocation = "memory:"\n' + memory,
        encoding="utf-8",
    )
    return path


async def test_memory_table_builds_the_store_and_writes_back(tmp_path: Path) -> None:
    manager = plugin_manager(fake_provider, memory_store, _memory_plugin(embeddings=True))
    path = _config(
        tmp_path,
        '[memory]\nprovider = "notes"\nscope = "user"\nwrite = ["final_answer"]\n'
        '[memory.settings]\npath = "x.db"\n'
        '[memory.embeddings]\nprovider = "fake"\nmodel = "fake-embed"\n',
    )
    composition = compose(path, environ={}, manager=manager, cwd=tmp_path)
    made = composition.runtime.memory.store
    assert made.settings == {"path": "x.db"}
    assert made.options["scope"] == "user"
    assert made.options["workspace"] == str(tmp_path.resolve())
    embedder = made.options["embedder"]
    assert (embedder.model, embedder.dimensions, embedder.name) == ("fake-embed", 64, "fake")
    result = await composition.runtime.run("which port?")
    assert result.output == "Port 8443"
    assert [r.content for r in made.store.records] == ["Q: which port?\nA: Port 8443"]
    await composition.aclose()
    assert made.closed


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[memory]\nprovider = "lethe"\n', "no memory plugin named 'lethe' is installed"),
        ('[memory]\nprovider = "sqlite"\n', "(install avo-memory)"),
        ('[memory]\nprovider = "notes"\nwrite = ["all"]\n', "memory.write[0]"),
        ('[memory]\nprovider = "notes"\nscope = "team"\n', "memory.scope"),
        (
            '[memory]\nprovider = "notes"\n[memory.embeddings]\nprovider = "fake"\nmodel = "e5"\n',
            "does not search by embeddings",
        ),
    ],
)
def test_memory_table_errors_name_the_key_and_the_fix(
    tmp_path: Path, table: str, message: str
) -> None:
    manager = plugin_manager(fake_provider, memory_store, _memory_plugin())
    with pytest.raises(ConfigError) as caught:
        compose(_config(tmp_path, table), environ={}, manager=manager, cwd=tmp_path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_undeclared_embedding_model_is_refused(tmp_path: Path) -> None:
    manager = plugin_manager(fake_provider, memory_store, _memory_plugin(embeddings=True))
    table = '[memory]\nprovider = "notes"\n[memory.embeddings]\nprovider = "fake"\nmodel = "e5"\n'
    with pytest.raises(ConfigError, match=r"declares no embedding model 'e5'.*fake-embed"):
        compose(_config(tmp_path, table), environ={}, manager=manager, cwd=tmp_path)


def test_memory_off_builds_nothing(tmp_path: Path) -> None:
    manager = plugin_manager(fake_provider, memory_store, _memory_plugin())
    path = _config(tmp_path, '[memory]\nprovider = "notes"\nenabled = false\n')
    composition = compose(path, environ={}, manager=manager, cwd=tmp_path)
    assert composition.runtime.memory is None
