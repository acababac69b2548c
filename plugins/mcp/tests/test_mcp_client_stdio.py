"""avo's stdio client against a server written with the official MCP SDK."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from avo.exceptions import MCPError
from avo.models import ToolCall
from avo.tools import ToolRegistry
from avo_mcp import MCPClient, MCPServer, mcp_tool, mcp_tools

TESTS_DIR = Path(__file__).resolve().parent


async def test_sdk_server_tools_in_registry_and_tool_errors(sdk_server_command, assert_reaped):
    server = MCPServer(command=sdk_server_command, name="sdk")
    async with MCPClient(server) as client:
        assert server.server_info["name"] == "sdk-demo"
        assert server.protocol_version == "2025-11-25"
        assert {"add", "shout", "boom", "crash", "hang", "garbage"} <= {
            tool["name"] for tool in server.tools
        }
        raw = await server.call_tool("add", {"a": 2, "b": 40})
        assert raw == {"name": "add", "is_error": False, "result": raw["result"], "text": "42"}
        # concurrent calls on one connection are matched to their answers by id
        sums = await asyncio.gather(*(server.call_tool("add", {"a": i, "b": i}) for i in range(8)))
        assert [int(answer["text"]) for answer in sums] == [2 * i for i in range(8)]
        registry = ToolRegistry(client.tools())
        shout = registry.get("shout")
        assert shout.metadata.input_schema["properties"]["text"]["type"] == "string"
        assert shout.metadata.description == "Upper-case a text."
        assert shout.metadata.effective_risk.value == "execute"  # annotations not trusted
        result = await registry.invoke(
            ToolCall(name="shout", arguments={"text": "hi"}), completed_tool_call_ids=set()
        )
        assert result.success, result.error
        assert result.output == "HI"
        failed = await registry.invoke(ToolCall(name="boom"), completed_tool_call_ids=set())
        assert not failed.success
        assert "returned an error" in failed.error
        assert "boom" in failed.error
        # the server is still usable after a tool error
        ok = await registry.invoke(
            ToolCall(name="add", arguments={"a": 1, "b": 1}), completed_tool_call_ids=set()
        )
        assert ok.success
        pid = client.server.pid
    assert_reaped(pid)


async def test_crash_mid_call_fails_and_reaps(sdk_server_command, assert_reaped):
    server = MCPServer(command=sdk_server_command, name="sdk")
    async with MCPClient(server) as client:
        registry = ToolRegistry(client.tools())
        result = await registry.invoke(ToolCall(name="crash"), completed_tool_call_ids=set())
        assert not result.success
        assert "exited with code 3" in result.error
        assert "crash tool: exiting now" in result.error
        # the reader task reaped the process without waiting for stop()
        assert server.returncode == 3
        assert_reaped(server.pid)
        again = await registry.invoke(
            ToolCall(name="add", arguments={"a": 1, "b": 1}), completed_tool_call_ids=set()
        )
        assert not again.success
        assert "exited with code 3" in again.error
    assert_reaped(server.pid)


async def test_garbage_on_stdout_fails_and_reaps(assert_reaped):
    # The SDK diverts fd 1 from the wire, so a hand-written server misbehaves here.
    server = MCPServer(command=[sys.executable, str(TESTS_DIR / "raw_server.py")])
    async with MCPClient(server) as client:
        registry = ToolRegistry(client.tools())
        result = await registry.invoke(ToolCall(name="garbage"), completed_tool_call_ids=set())
        assert not result.success
        assert "wrote invalid output on stdout" in result.error
        assert "oops, this is not JSON-RPC" in result.error
        # killed and reaped at once, before stop()
        assert server.returncode is not None
        assert_reaped(server.pid)
    assert_reaped(server.pid)


async def test_garbage_before_handshake_fails_start(assert_reaped):
    command = [sys.executable, str(TESTS_DIR / "raw_server.py"), "garbage-at-start"]
    server = MCPServer(command=command)
    with pytest.raises(MCPError, match=r"wrote invalid output on stdout.*Starting server"):
        await server.start()
    assert_reaped(server.pid)


async def test_server_that_cannot_start(assert_reaped, tmp_path):
    with pytest.raises(MCPError, match="cannot start MCP server"):
        await MCPServer(command=[str(tmp_path / "no-such-binary")]).start()
    server = MCPServer(command=[sys.executable, "-c", "import sys; sys.exit(5)"], name="dies")
    with pytest.raises(MCPError, match="exited with code 5"):
        await server.start()
    assert_reaped(server.pid)


async def test_reference_errors():
    with pytest.raises(MCPError, match="MCPServer requires a non-empty command"):
        MCPServer(command=[])
    client = MCPClient(MCPServer(command=["true"]))
    with pytest.raises(MCPError, match="MCPClient used outside `async with` block"):
        client.tools()
    with pytest.raises(MCPError, match="is not started"):
        mcp_tools(client.server)
    with pytest.raises(MCPError, match="has no name"):
        mcp_tool(client.server, {"description": "x"})


async def test_content_length_fallback(assert_reaped):
    # A legacy server that frames its answers with Content-Length headers.
    script = r"""
import json, sys
def send(msg):
    body = json.dumps(msg).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy", "version": "0"}}})
    elif msg.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [
            {"name": "ping_tool", "inputSchema": {"type": "object"}}]}})
    elif msg.get("method") == "tools/call":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "content": [{"type": "text", "text": "pong"}]}})
"""
    server = MCPServer(command=[sys.executable, "-c", script])
    async with MCPClient(server) as client:
        (tool,) = client.tools()
        assert tool.metadata.description.startswith("MCP tool ping_tool")
        out = await tool.invoke({})
        assert out == "pong"
        assert server.protocol_version == "2024-11-05"
    assert_reaped(server.pid)


def test_risk_from_annotations_only_when_trusted():
    server = MCPServer(command=["unused"])
    read_only = {"name": "r", "annotations": {"readOnlyHint": True}}
    assert mcp_tool(server, read_only).metadata.effective_risk.value == "execute"
    assert mcp_tool(server, read_only, trust_annotations=True).metadata.risk.value == "inspect"
    gentle = {"name": "g", "annotations": {"destructiveHint": False}}
    assert mcp_tool(server, gentle, trust_annotations=True).metadata.risk.value == "modify"
    assert mcp_tool(server, {"name": "x"}, trust_annotations=True).metadata.risk is None
    named = mcp_tool(server, read_only, name="srv_r", risk=None)
    assert named.metadata.name == "srv_r" and named.remote_name == "r"


async def test_silent_server_that_ignores_sigterm_is_killed_and_reaped(assert_reaped):
    script = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "sys.stdin.close()\n"
        "time.sleep(120)\n"
    )
    server = MCPServer(command=[sys.executable, "-c", script], startup_timeout_seconds=1.0)
    with pytest.raises(MCPError, match="did not answer initialize within 1 seconds"):
        await server.start()
    assert server.returncode == -9  # SIGKILL after the ignored SIGTERM
    assert_reaped(server.pid)
    await server.stop()  # idempotent


async def test_server_closing_stdout_fails_fast(assert_reaped):
    script = r"""
import json, os, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "closer", "version": "0"}}}), flush=True)
    elif msg.get("method") == "tools/list":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [
            {"name": "close", "inputSchema": {"type": "object"}}]}}), flush=True)
    elif msg.get("method") == "tools/call":
        os.close(1)
        time.sleep(120)
"""
    server = MCPServer(command=[sys.executable, "-c", script], timeout_seconds=60)
    async with MCPClient(server) as client:
        (tool,) = client.tools()
        with pytest.raises(MCPError, match="closed its stdout but kept running"):
            await tool.invoke({})
        assert_reaped(server.pid)


def test_tool_names_are_model_safe():
    server = MCPServer(command=["unused"])
    tool = mcp_tool(server, {"name": "weather.get current", "inputSchema": {"properties": {}}})
    assert tool.metadata.name == "weather_get_current"
    assert tool.remote_name == "weather.get current"
    assert tool.metadata.input_schema == {"type": "object", "properties": {}}
    long = mcp_tool(server, {"name": "x" * 100})
    assert len(long.metadata.name) == 64


def _gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return True
    # not our child: once killed it may linger as a zombie of pid 1 in a container
    return stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def test_server_requests_are_answered_and_grandchildren_are_ended(tmp_path, assert_reaped):
    server = MCPServer(command=[sys.executable, str(TESTS_DIR / "raw_server.py")])
    async with MCPClient(server) as client:
        tools = {tool.metadata.name: tool for tool in client.tools()}
        echoed = json.loads(await tools["echo"].invoke({"x": 1}))
        assert echoed["arguments"] == {"x": 1}
        assert echoed["ping"] == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
        assert echoed["sampling"]["error"]["code"] == -32601
        pid_file = tmp_path / "grandchild.pid"
        with pytest.raises(MCPError, match="exited with code 4"):
            await tools["spawn_then_crash"].invoke({"pid_file": str(pid_file)})
        grandchild = int(pid_file.read_text())
        for _ in range(50):
            if _gone(grandchild):
                break
            await asyncio.sleep(0.1)
        assert _gone(grandchild)
    assert_reaped(server.pid)


async def test_server_that_stops_reading_stdin_cannot_block_writes(assert_reaped):
    server = MCPServer(
        command=[sys.executable, str(TESTS_DIR / "raw_server.py")], timeout_seconds=1.0
    )
    async with MCPClient(server) as client:
        tools = {tool.metadata.name: tool for tool in client.tools()}
        with pytest.raises(MCPError, match="did not answer tools/call within 1 seconds"):
            await tools["deaf"].invoke({})
        # 4 MB of arguments cannot fit in the pipe the server no longer reads
        with pytest.raises(MCPError, match="did not answer tools/call within 1 seconds"):
            await tools["echo"].invoke({"blob": "x" * (4 * 1024 * 1024)})
    assert_reaped(server.pid)
