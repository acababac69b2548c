"""The official MCP SDK's client drives `avo serve-mcp` over stdio."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError as SdkMCPError

from avo.exceptions import MCPError as AvoMCPError


def _avo_command() -> tuple[str, list[str]]:
    avo = shutil.which("avo")
    if avo:
        return avo, []
    return sys.executable, ["-c", "import sys; from avo.cli import main; sys.exit(main())"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# demo\nhello from the workspace\n")
    (root / "src" / "app.py").write_text("def greet():\n    return 'hello'\n")
    (root / ".git").mkdir()  # hidden dirs are not listed as resources
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def _params(workspace: Path) -> StdioServerParameters:
    command, args = _avo_command()
    return StdioServerParameters(
        command=command, args=[*args, "serve-mcp", "--workspace-root", str(workspace)]
    )


async def test_sdk_client_drives_avo_serve_mcp(workspace: Path) -> None:
    async with (
        stdio_client(_params(workspace), errlog=subprocess.DEVNULL) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.server_info.name == "avo"
        assert init.protocol_version == "2025-11-25"
        assert init.capabilities.tools is not None
        assert init.capabilities.resources is not None

        listed = await session.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert {"read_file", "write_file", "edit_file", "glob", "grep", "git_status"} <= set(tools)
        # annotations come from the declared risk class
        assert tools["read_file"].annotations.read_only_hint is True
        assert tools["read_file"].annotations.destructive_hint is False
        assert tools["write_file"].annotations.read_only_hint is False
        assert tools["write_file"].annotations.destructive_hint is True
        assert tools["grep"].input_schema["properties"]["pattern"]["type"] == "string"

        read = await session.call_tool("read_file", {"path": "README.md"})
        assert read.is_error is False
        assert read.structured_content["content"] == "# demo\nhello from the workspace\n"
        assert "hello from the workspace" in read.content[0].text

        grep = await session.call_tool("grep", {"pattern": "hello"})
        assert grep.is_error is False
        text = grep.content[0].text
        assert "README.md" in text
        assert "src/app.py" in text

        escape = await session.call_tool("read_file", {"path": "../../etc/passwd"})
        assert escape.is_error is True
        assert "escapes workspace root" in escape.content[0].text

        resources = await session.list_resources()
        uris = [str(resource.uri) for resource in resources.resources]
        assert uris == ["avo://workspace/README.md", "avo://workspace/src/app.py"]

        contents = await session.read_resource("avo://workspace/src/app.py")
        assert contents.contents[0].text == "def greet():\n    return 'hello'\n"

        templates = await session.list_resource_templates()
        assert templates.resource_templates[0].uri_template == "avo://workspace/{+path}"

        with pytest.raises(SdkMCPError, match="points outside the workspace"):
            await session.read_resource("avo://workspace/../outside.txt")

        await session.send_ping()


async def test_sdk_high_level_client_auto_mode_falls_back_to_handshake(workspace: Path) -> None:
    # mcp.Client probes `server/discover` (2026-07-28) first; avo answers "method
    # not found" and the client falls back to the initialize handshake.
    from mcp import Client

    async with Client(_params(workspace)) as client:
        listed = await client.list_tools()
        assert "read_file" in {tool.name for tool in listed.tools}
        result = await client.call_tool("read_file", {"path": "src/app.py"})
        assert result.is_error is False
        assert "def greet" in result.content[0].text


async def test_serve_mcp_serves_chosen_tool_plugins(workspace: Path, assert_reaped) -> None:
    from avo_mcp import MCPClient, MCPServer

    command, args = _avo_command()
    server = MCPServer(
        command=[
            command,
            *args,
            "serve-mcp",
            "--workspace-root",
            str(workspace),
            "--tool",
            "glob",
            "--tool",
            "read_file",
        ]
    )
    async with MCPClient(server) as client:
        names = [tool.metadata.name for tool in client.tools()]
        assert names == ["glob", "read_file", "list_resources", "read_resource"]
        found = await client.tools()[0].invoke({"pattern": "**/*.py"})
        assert "src/app.py" in found
    assert_reaped(server.pid)
    missing = MCPServer(
        command=[
            command,
            *args,
            "serve-mcp",
            "--workspace-root",
            str(workspace),
            "--tool",
            "no_such_tool",
        ]
    )
    with pytest.raises(AvoMCPError, match="exited with code 2"):
        await missing.start()
    assert any("no_such_tool" in line for line in missing.stderr_tail)
    assert_reaped(missing.pid)
