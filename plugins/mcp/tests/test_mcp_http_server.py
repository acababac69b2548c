"""``avo serve-mcp --http``: sessions, DNS-rebinding checks, avo's own client against it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from avo_mcp import AvoMcpServer, MCPClient, MCPHttpServer, build_default_registry
from avo_mcp.http_server import McpHttpServer, host_of

from .conftest import free_port, stop_process, wait_for_port

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
}
JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
async def served(tmp_path: Path):
    (tmp_path / "a.txt").write_text("alpha\n")
    registry = build_default_registry()
    server = McpHttpServer(lambda: AvoMcpServer(registry, workspace_root=tmp_path))
    _host, port = await server.start("127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        await server.close()


async def test_session_lifecycle_over_http(served: str) -> None:
    async with httpx.AsyncClient() as http:
        opened = await http.post(served, json=INIT, headers=JSON)
        assert opened.status_code == 200
        session = opened.headers["mcp-session-id"]
        assert opened.json()["result"]["serverInfo"]["name"] == "avo"
        headers = {**JSON, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(served, json=note, headers=headers)).status_code == 202
        listed = await http.post(
            served, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        )
        assert "read_file" in {tool["name"] for tool in listed.json()["result"]["tools"]}
        batch = await http.post(
            served,
            json=[{"jsonrpc": "2.0", "id": 3, "method": "ping"}, note],
            headers=headers,
        )
        assert batch.json() == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
        assert (await http.get(served, headers=headers)).status_code == 405  # no GET stream
        no_session = await http.post(
            served, json={"jsonrpc": "2.0", "id": 4, "method": "ping"}, headers=JSON
        )
        assert no_session.status_code == 400
        bad_version = await http.post(
            served,
            json={"jsonrpc": "2.0", "id": 5, "method": "ping"},
            headers={**headers, "MCP-Protocol-Version": "1999-01-01"},
        )
        assert bad_version.status_code == 400
        assert (await http.delete(served, headers=headers)).status_code == 200
        gone = await http.post(
            served, json={"jsonrpc": "2.0", "id": 6, "method": "ping"}, headers=headers
        )
        assert gone.status_code == 404
        assert (await http.post(served, content=b"{", headers=JSON)).status_code == 400
        plain = {**JSON, "Content-Type": "text/plain"}
        assert (await http.post(served, json=INIT, headers=plain)).status_code == 415


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example"}, 403),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "null"}, 403),
        ({"Origin": "http://localhost:3000"}, 200),
        ({"Host": "localhost"}, 200),
        ({"Host": "[::1]:8080", "Origin": "https://[::1]"}, 200),
    ],
)
async def test_dns_rebinding_protection(served: str, headers: dict, status: int) -> None:
    async with httpx.AsyncClient() as http:
        answer = await http.post(served, json=INIT, headers={**JSON, **headers})
        assert answer.status_code == status
        if status == 403:
            assert "DNS-rebinding protection" in answer.json()["error"]["message"]


def test_host_of() -> None:
    assert host_of("localhost:8765") == "localhost"
    assert host_of("[::1]:80") == "::1"
    assert host_of("127.0.0.1") == "127.0.0.1"


async def test_avo_client_against_avo_serve_mcp_http(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "avo_mcp", "serve-mcp", "--http", "--port", str(port),
         "--workspace-root", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_for_port(port, process, "avo serve-mcp --http")
        server = MCPHttpServer(url=f"http://localhost:{port}/mcp")
        async with MCPClient(server) as client:
            assert server.name == "localhost-" + str(port)
            tools = {tool.metadata.name: tool for tool in client.tools()}
            assert "src/app.py" in await tools["glob"].invoke({"pattern": "**/*.py"})
            missing = await tools["read_file"].invoke({"path": "src/app.py"})
            assert "print('hi')" in missing
            with pytest.raises(Exception, match=r"not found|No such file|does not exist") as info:
                await tools["read_file"].invoke({"path": "nope.txt"})
            assert str(tmp_path) not in str(info.value)  # no host paths in errors
    finally:
        stop_process(process)
        with process.stderr:
            banner = process.stderr.read()
    assert b"MCP over HTTP at http://127.0.0.1:" in banner
