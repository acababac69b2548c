"""avo's streamable HTTP client against the SDK's server on a loopback port."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from avo import AgentRuntime, FakeProvider, ModelResponse, ToolCall
from avo.exceptions import MCPError
from avo_mcp import MCPClient, MCPHttpServer

TESTS_DIR = Path(__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module", params=["sse", "json"])
def http_server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The SDK server answering with event streams (stateful) or plain JSON (stateless)."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(TESTS_DIR / "sdk_server.py"), "http", str(port), request.param],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the SDK HTTP server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # a request still hangs in the server
            process.kill()
            process.wait(timeout=10)


async def test_http_handshake_and_calls(http_server_url: str) -> None:
    server = MCPHttpServer(url=http_server_url, name="sdk-http")
    async with MCPClient(server) as client:
        assert server.server_info["name"] == "sdk-demo"
        assert server.protocol_version == "2025-11-25"
        tools = {tool.metadata.name: tool for tool in client.tools()}
        assert {"add", "shout", "boom"} <= set(tools)
        assert await tools["add"].invoke({"a": 5, "b": 6}) == "11"
        with pytest.raises(MCPError, match="returned an error"):
            await tools["boom"].invoke({})
    assert server.session_id is None  # closed


async def test_http_runtime_run(http_server_url: str) -> None:
    async with MCPClient(MCPHttpServer(url=http_server_url)) as client:
        provider = FakeProvider(
            [
                ModelResponse(tool_call=ToolCall(name="shout", arguments={"text": "mcp"})),
                ModelResponse(content="done"),
            ]
        )
        result = await AgentRuntime(provider=provider, tools=client.tools()).run("shout")
        assert result.status.value == "completed"
        assert "MCP" in provider.requests[1].messages[-1]["content"]


async def test_http_timeout_and_unreachable(http_server_url: str) -> None:
    # Connect and list with room to spare (a loaded machine can take more than a
    # second to answer tools/list), then hold the hanging call to one second.
    server = MCPHttpServer(url=http_server_url, timeout_seconds=60.0)
    async with MCPClient(server) as client:
        server.timeout_seconds = 1.0
        (hang,) = [tool for tool in client.tools() if tool.metadata.name == "hang"]
        with pytest.raises(MCPError, match="did not answer tools/call within 1 seconds"):
            await hang.invoke({})
    dead = MCPHttpServer(url=f"http://127.0.0.1:{_free_port()}/mcp")
    with pytest.raises(MCPError, match="cannot reach MCP server"):
        await dead.start()
    with pytest.raises(MCPError, match="must be http"):
        MCPHttpServer(url="ftp://example.invalid/mcp")
