"""AGENTS.md reaches the model; [context] and [instructions] in avo.toml enable the bundles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from avo import AgentRuntime, EventType, ModelResponse, RunState
from avo.compose import compose
from avo.exceptions import ConfigError
from avo.models import ModelRequest
from avo.plugins.manager import PluginManager
from avo.storage.memory import InMemoryEventStore
from avo_context import InstructionsBundle, InstructionsSettings, read_instructions


class Obedient:
    """Answers in the language the system instructions ask for, if any."""

    name = "obedient"
    model = "obedient-1"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        system = " ".join(str(m["content"]) for m in request.messages if m["role"] == "system")
        if "Always answer in French" in system:
            return ModelResponse(content="Bonjour")
        return ModelResponse(content="Hello")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def test_a_run_follows_an_instruction_only_in_agents_md(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    write(workspace / "AGENTS.md", "# Conventions\n\nAlways answer in French.\n")
    provider = Obedient()
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=provider,  # type: ignore[arg-type]
        event_store=store,
        bundles=[InstructionsBundle()],
        workspace=str(workspace),
    )
    result = await runtime.run("greet me", system_prompt="You are helpful.")
    assert result.output == "Bonjour"
    messages = provider.requests[0].messages
    assert messages[0]["content"] == "You are helpful."
    assert "Always answer in French." in str(messages[1]["content"])
    # without the bundle the same model answers in English
    plain = AgentRuntime(provider=Obedient(), workspace=str(workspace))  # type: ignore[arg-type]
    assert (await plain.run("greet me")).output == "Hello"
    # the transcript never holds the instructions; the run's first event says where they came from
    cp = await store.get_latest_checkpoint(result.run_id)
    assert cp is not None and all("French" not in str(m["content"]) for m in cp.messages)
    created = (await store.get_events(result.run_id))[0]
    assert created.payload["bundles"][0]["name"] == "instructions"


def test_nearest_wins_and_the_size_is_capped(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "outer rules\n" + "o" * 400)
    write(tmp_path / "a" / "AGENTS.md", "middle rules")
    write(tmp_path / "a" / "b" / "AGENTS.md", "nearest rules")
    found = read_instructions(tmp_path / "a" / "b", InstructionsSettings(max_bytes=300))
    # nearest first within the budget; shown outermost first, the nearest last
    assert found.files == [
        str(tmp_path / "a" / "b" / "AGENTS.md"),
        str(tmp_path / "a" / "AGENTS.md"),
        str(tmp_path / "AGENTS.md"),
    ]
    assert found.text.index("middle rules") < found.text.index("nearest rules")
    assert "cut at the 300-byte limit" in found.text
    assert "o" * 300 not in found.text
    only_here = read_instructions(tmp_path / "a" / "b", InstructionsSettings(parents=False))
    assert only_here.files == [str(tmp_path / "a" / "b" / "AGENTS.md")]
    assert read_instructions(tmp_path / "empty", InstructionsSettings(parents=False)).text == ""


def test_an_unreadable_file_is_a_problem_not_an_error(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "fine")
    (tmp_path / "sub" / "AGENTS.md").mkdir(parents=True)  # a directory, not a file: skipped
    found = read_instructions(tmp_path / "sub", InstructionsSettings())
    assert found.files == [str(tmp_path / "AGENTS.md")] and found.problems == {}


CONFIG = """
[provider]
name = "fake"
[provider.settings]
script = [{{content = "done"}}]

[store]
location = "memory://"
{extra}
"""


def composed(tmp_path: Path, extra: str) -> Any:
    path = write(tmp_path / "avo.toml", CONFIG.format(extra=extra))
    return compose(path, environ={}, manager=PluginManager(environ={}), workspace=tmp_path)


async def test_the_config_tables_enable_the_bundles(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "Be brief.")
    composition = composed(
        tmp_path,
        "[context]\nwindow = 4096\nkeep_recent_turns = 3\n[instructions]\nmax_bytes = 1000\n",
    )
    runtime = composition.runtime
    assert runtime.context_window.tokens == 4096 and runtime.context_window.source == "config"
    names = [type(b).__name__ for b in runtime._bundles]
    assert names == ["CompactionBundle", "InstructionsBundle"]
    assert runtime._bundles[0].settings.keep_recent_turns == 3
    result = await runtime.run("hi")
    assert result.status is RunState.COMPLETED
    provider = runtime.provider
    assert "Be brief." in str(provider.requests[0].messages[0]["content"])  # type: ignore[attr-defined]
    assert [t.name for t in provider.requests[0].tools] == ["recall"]  # type: ignore[attr-defined]
    events = await runtime.event_store.get_events(result.run_id)
    shaped = [e for e in events if e.event_type is EventType.REQUEST_SHAPED]
    assert shaped[0].payload["window"] == {"tokens": 4096, "source": "config", "model": "fake"}


def test_bad_settings_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"context.*threshold"):
        composed(tmp_path, "[context]\nthreshold = 2\n")
    with pytest.raises(ConfigError, match=r"unknown key 'context.keep_recnt_turns'"):
        composed(tmp_path, "[context]\nkeep_recnt_turns = 2\n")
    with pytest.raises(ConfigError, match=r"no bundle or request shaper plugin named 'nope'"):
        composed(tmp_path, '[context]\npolicy = "nope"\n')


def test_no_policy_and_disabled_tables(tmp_path: Path) -> None:
    composition = composed(
        tmp_path,
        '[context]\npolicy = "none"\ndefault_window = 5000\n[instructions]\nenabled = false\n',
    )
    runtime = composition.runtime
    assert runtime._bundles == []
    # the fake provider's window is unknown: the configured default, recorded as such
    assert (runtime.context_window.tokens, runtime.context_window.source) == (5000, "default")
