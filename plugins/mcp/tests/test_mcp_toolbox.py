"""MCPToolbox: several configured servers, one of them broken."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from avo import AgentRuntime, FakeProvider, ModelResponse, ToolCall
from avo.exceptions import AvoError
from avo_mcp import MCPServer, MCPToolbox, servers_from_config

TESTS_DIR = Path(__file__).resolve().parent


async def test_toolbox_from_config_skips_a_broken_server(tmp_path: Path, assert_reaped) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "raw": {"command": ["${PY}", str(TESTS_DIR / "raw_server.py")]},
                "broken": {"command": [str(tmp_path / "missing-binary")]},
            }
        )
    )
    servers = servers_from_config(config, environ={"PY": sys.executable, "PATH": "/usr/bin"})
    async with MCPToolbox(servers, prefix_with_name=True) as toolbox:
        assert set(toolbox.failures) == {"broken"}
        assert "cannot start MCP server 'broken'" in toolbox.failures["broken"]
        names = {tool.metadata.name for tool in toolbox.tools()}
        assert "raw__echo" in names
        provider = FakeProvider(
            [
                ModelResponse(tool_call=ToolCall(name="raw__boom", arguments={})),
                ModelResponse(content="ok"),
            ]
        )
        result = await AgentRuntime(provider=provider, tools=toolbox.tools()).run("go")
        assert result.status.value == "completed"
        assert "the boom tool always fails" in provider.requests[1].messages[-1]["content"]
        (running,) = toolbox.running
    assert_reaped(running.pid)


def test_toolbox_rejects_duplicate_names() -> None:
    twice = [MCPServer(command=["x"], name="a"), MCPServer(command=["y"], name="a")]
    with pytest.raises(AvoError, match="repeated: a"):
        MCPToolbox(twice)


async def test_avo_as_its_own_mcp_server_end_to_end(tmp_path: Path, capsys, assert_reaped):
    """`avo mcp add` avo's own server, boot it from the config, run an agent on it."""
    import shutil

    from avo.cli import main

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("the answer is 42\n")
    config = tmp_path / "mcp.json"
    avo = shutil.which("avo")
    command = [avo] if avo else [sys.executable, "-m", "avo_mcp"]
    code = main(
        [
            "mcp",
            "--config",
            str(config),
            "add",
            "self",
            *command,
            "serve-mcp",
            "--workspace-root",
            "${WS}",
        ],
        environ={"HOME": str(tmp_path)},
    )
    assert code == 0, capsys.readouterr().err
    servers = servers_from_config(config, environ={**os.environ, "WS": str(workspace)})
    async with MCPToolbox(servers, prefix_with_name=True) as toolbox:
        assert toolbox.failures == {}
        provider = FakeProvider(
            [
                ModelResponse(
                    tool_call=ToolCall(name="self__grep", arguments={"pattern": "answer"})
                ),
                ModelResponse(content="42"),
            ]
        )
        result = await AgentRuntime(provider=provider, tools=toolbox.tools()).run("find it")
        assert result.status.value == "completed"
        assert "notes.txt" in provider.requests[1].messages[-1]["content"]
        (running,) = toolbox.running
    assert_reaped(running.pid)
