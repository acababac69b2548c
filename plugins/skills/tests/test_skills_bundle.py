"""The skills bundle: a list of skills in the instructions, full text on demand; avo init."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import pytest

from avo import AgentRuntime, ModelResponse, RunState, ToolCall
from avo.compose import compose
from avo.models import ModelRequest
from avo.plugins.manager import PluginManager
from avo.storage.memory import InMemoryEventStore
from avo_skills.bundle import SkillsBundle
from avo_skills.cli import configure_init, run_init

DEPLOY = """---
name: deploy
description: How to ship a release of this project.
---
# Deploy

Run `make release` and then post the word PELICAN in the channel.
"""


class SkillUser:
    """Loads the 'deploy' skill when it is listed, then answers with what the skill said."""

    name = "skill-user"
    model = "skill-user"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        last = request.messages[-1]
        if last["role"] == "tool":
            word = "PELICAN" if "PELICAN" in str(last["content"]) else "nothing"
            return ModelResponse(content=f"posted {word}")
        system = " ".join(str(m["content"]) for m in request.messages if m["role"] == "system")
        if "- deploy: How to ship a release" in system:
            return ModelResponse(
                tool_call=ToolCall(name="load_skill", arguments={"name": "deploy"})
            )
        return ModelResponse(content="no skills")


def install(root: Path) -> None:
    folder = root / ".avo" / "skills" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(DEPLOY, encoding="utf-8")


async def test_the_list_is_injected_and_a_skill_loads_on_demand(tmp_path: Path) -> None:
    install(tmp_path)
    provider = SkillUser()
    runtime = AgentRuntime(
        provider=provider,  # type: ignore[arg-type]
        event_store=InMemoryEventStore(),
        bundles=[SkillsBundle()],
        workspace=str(tmp_path),
    )
    result = await runtime.run("ship it")
    assert result.status is RunState.COMPLETED
    assert result.output == "posted PELICAN"
    first = provider.requests[0]
    listing = str(first.messages[0]["content"])
    assert "- deploy: How to ship a release of this project." in listing
    assert "PELICAN" not in listing  # the full text only arrives when loaded
    assert [t.name for t in first.tools] == ["load_skill"]


async def test_unknown_skill_and_no_skills(tmp_path: Path) -> None:
    install(tmp_path)
    tool = SkillsBundle().parts(tmp_path).tools[0]
    try:
        await tool.invoke({"name": "nope"})
    except Exception as exc:
        assert "no skill named 'nope'" in str(exc) and "deploy" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("an unknown skill must fail")
    empty = SkillsBundle().parts(tmp_path / "elsewhere")
    assert (list(empty.tools), list(empty.instructions)) == ([], [])


async def test_avo_init_writes_an_avo_toml_that_enables_them(tmp_path: Path) -> None:
    pytest.importorskip("avo_context", reason="the avo.toml names avo-context's bundles")
    pytest.importorskip("avo_mcp", reason="the avo.toml names avo-mcp's bundle")
    parser = argparse.ArgumentParser(prog="avo init")
    configure_init(parser)
    out = io.StringIO()
    assert run_init(parser.parse_args(["--root", str(tmp_path)]), stdout=out) == 0
    config = tmp_path / "avo.toml"
    assert config.is_file() and f"created {config}" in out.getvalue()
    home = tmp_path / "home"
    home.mkdir()
    env: dict[str, Any] = {"AVO_PROVIDER": "fake", "HOME": str(home)}
    composition = compose(
        config,
        environ=env,
        manager=PluginManager(environ=env),
        workspace=tmp_path,
        database="memory://",
    )
    try:
        names = [type(b).__name__ for b in composition.runtime._bundles]
        assert names == ["CompactionBundle", "InstructionsBundle", "SkillsBundle", "McpBundle"]
    finally:
        await composition.aclose()
