"""[mcp] in avo.toml: the servers start with the run, their tools join it, they stop after."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from avo import AgentRuntime, EventType, ModelResponse, RunState
from avo.compose import compose
from avo.models import ModelRequest
from avo.plugins.manager import PluginManager
from avo_mcp.bundle import McpBundle

CONFIG = """
[provider]
name = "fake"
[provider.settings]
script = [
  {{tool_call = {{name = "files__read_file", arguments = {{path = "notes.txt"}}}}}},
  {{content = "done"}},
]

[store]
location = "{db}"

[mcp]
user_servers = false
trust_annotations = true      # read_file says it is read-only: the default mode runs it
[mcp.servers.files]
command = {command}
"""


def filesystem_server(root: Path) -> list[str]:
    return [sys.executable, "-m", "avo_mcp.servers.filesystem", "--root", str(root)]


async def test_a_run_uses_a_tool_from_a_server_named_only_in_avo_toml(
    tmp_path: Path, assert_reaped: Any
) -> None:
    (tmp_path / "notes.txt").write_text("the launch code is 0000\n", encoding="utf-8")
    config = tmp_path / "avo.toml"
    config.write_text(
        CONFIG.format(db="memory://", command=json.dumps(filesystem_server(tmp_path)))
    )
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    composition = compose(
        config, environ=env, manager=PluginManager(environ=env), workspace=tmp_path
    )
    async with composition:
        runtime = composition.runtime
        (bundle,) = runtime._bundles
        assert isinstance(bundle, McpBundle)
        result = await runtime.run("what is the launch code?")
        assert result.status is RunState.COMPLETED, result.error
        events = await runtime.event_store.get_events(result.run_id)
    created = events[0].payload["bundles"][0]
    assert created["name"] == "mcp" and "files__read_file" in created["tools"]
    completed = [e for e in events if e.event_type is EventType.TOOL_COMPLETED]
    assert "the launch code is 0000" in json.dumps(completed[0].payload["result"])
    # the server ended with the run, and the runtime's registry is its own again
    assert bundle._toolbox is None
    assert "files__read_file" not in runtime.tools


async def test_servers_stop_when_the_run_crashes(tmp_path: Path, assert_reaped: Any) -> None:
    class Crash(BaseException):
        pass

    class Dies:
        name = "dies"
        model = "dies"

        async def generate(self, request: ModelRequest) -> ModelResponse:
            assert any(t.name == "files__list_directory" for t in request.tools)
            raise Crash

    bundle = McpBundle(
        {"user_servers": False, "servers": {"files": {"command": filesystem_server(tmp_path)}}}
    )
    started: list[Any] = []
    setup = bundle.setup

    async def spy(run: Any) -> Any:
        parts = await setup(run)
        started.extend(bundle._toolbox.running)
        return parts

    bundle.setup = spy  # type: ignore[method-assign]
    runtime = AgentRuntime(provider=Dies(), bundles=[bundle])  # type: ignore[arg-type]
    with pytest.raises(Crash):
        await runtime.run("t")
    assert started and bundle._toolbox is None
    for server in started:
        assert_reaped(server.pid)


async def test_a_server_that_does_not_start_is_a_problem_not_a_failure(tmp_path: Path) -> None:
    class Answers:
        name = "answers"
        model = "answers"

        async def generate(self, request: ModelRequest) -> ModelResponse:
            return ModelResponse(content="fine")

    bundle = McpBundle(
        {
            "user_servers": False,
            "servers": {
                "broken": {"command": [sys.executable, "-c", "import sys; sys.exit(3)"]},
                "files": {"command": filesystem_server(tmp_path)},
            },
        }
    )
    runtime = AgentRuntime(provider=Answers(), bundles=[bundle])  # type: ignore[arg-type]
    result = await runtime.run("t")
    assert result.status is RunState.COMPLETED
    events = await runtime.event_store.get_events(result.run_id)
    record = events[0].payload["bundles"][0]
    assert "broken" in record["problems"] and record["problems"]["broken"].startswith(
        "did not start"
    )
    assert any(name.startswith("files__") for name in record["tools"])


def test_server_settings_are_checked() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="either command"):
        McpBundle({"servers": {"x": {}}})
    with pytest.raises(ValidationError, match="is not http"):
        McpBundle({"servers": {"x": {"url": "ftp://nope"}}})


def test_user_servers_join_and_avo_toml_wins(tmp_path: Path) -> None:
    from avo.bundles import BundleRun

    home = tmp_path / "home"
    (home / ".avo").mkdir(parents=True)
    (home / ".avo" / "mcp.json").write_text(
        json.dumps({"files": {"command": ["user-one"]}, "time": {"command": ["uvx", "time"]}})
    )
    bundle = McpBundle({"servers": {"files": {"command": ["project-one"], "args": ["--x"]}}})
    run = BundleRun(
        run_id="r",
        resumed=False,
        session_id=None,
        event_store=None,
        environ={"HOME": str(home)},
        workspace=tmp_path,
    )
    entries, problems = bundle.entries(run)
    assert problems == {}
    assert entries["files"]["command"] == ["project-one", "--x"]
    assert entries["time"]["command"] == ["uvx", "time"]
    (home / ".avo" / "mcp.json").write_text("{not json")
    entries, problems = bundle.entries(run)
    assert "mcp.json" in problems and set(entries) == {"files"}
