"""MCPToolbox: several configured servers, one of them broken."""

from __future__ import annotations

import json
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
