"""``avo serve-mcp --http`` keeps a bounded number of sessions: an idle one ends, a new
one pushes out the one idle the longest (a busy one never: then the new one is ``503``),
an ended one is ``404``, and avo's own client then starts a new session and sends the
request again, as MCP requires. Ending a session cancels its running requests. Over
127.0.0.1; the idle clock is a fake one the test moves."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from http_wire import STREAM, Nothing, init_request

from avo.tools import FunctionTool
from avo_mcp import AvoMcpServer, build_default_registry
from avo_mcp.http_client import MCPHttpServer
from avo_mcp.http_server import McpHttpServer

from .conftest import free_port, stop_process, wait_for_port

INIT = init_request()
PING = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
SLOW = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "slow", "arguments": {}},
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Served:
    def __init__(self, tmp_path: Path, **options: Any) -> None:
        self.release = asyncio.Event()
        self.cancelled = 0
        self.clock = Clock()

        async def slow(args: Nothing) -> str:
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return "slow done"

        registry = build_default_registry()
        registry.register(
            FunctionTool(name="slow", description="Wait.", arguments_model=Nothing, function=slow)
        )
        self.server = McpHttpServer(
            lambda: AvoMcpServer(registry, workspace_root=tmp_path), clock=self.clock, **options
        )

    async def __aenter__(self) -> Served:
        _host, port = await self.server.start("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.http = httpx.AsyncClient(timeout=30)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release.set()
        await self.http.aclose()
        await self.server.close()

    async def open(self) -> dict[str, str]:
        opened = await self.http.post(self.url, json=INIT, headers=STREAM)
        assert opened.status_code == 200, opened.text
        return {**STREAM, "Mcp-Session-Id": opened.headers["mcp-session-id"]}

    async def ping(self, session: dict[str, str]) -> int:
        return (await self.http.post(self.url, json=PING, headers=session)).status_code

    async def start_slow(self, session: dict[str, str]) -> None:
        async with self.http.stream("POST", self.url, json=SLOW, headers=session) as response:
            async for chunk in response.aiter_text():
                if "data:\n\n" in chunk:
                    break  # primed: the tool runs; drop the connection
        for _ in range(200):
            if any(s._in_flight for s in self.server.sessions.values()):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the slow tool never started")


async def test_an_idle_session_ends_and_a_busy_one_does_not(tmp_path: Path) -> None:
    async with Served(tmp_path, session_idle_seconds=60) as served:
        idle = await served.open()
        busy = await served.open()
        await served.start_slow(busy)
        served.clock.now += 61
        assert await served.ping(idle) == 404  # ended: the client must initialize again
        assert await served.ping(busy) == 200  # its tool still runs: not idle
        assert len(served.server.sessions) == 1
        served.release.set()
        rest = await served.http.get(served.url, headers={**busy, "Last-Event-ID": "1/0"})
        assert "slow done" in rest.text


async def test_a_new_session_pushes_out_the_longest_idle_one(tmp_path: Path) -> None:
    async with Served(tmp_path, max_sessions=2) as served:
        first = await served.open()
        served.clock.now += 1
        second = await served.open()
        served.clock.now += 1
        assert await served.ping(first) == 200  # first is now the more recently used
        served.clock.now += 1
        third = await served.open()
        assert len(served.server.sessions) == 2
        assert await served.ping(second) == 404
        assert await served.ping(first) == 200 and await served.ping(third) == 200


async def test_when_every_session_is_busy_a_new_one_is_refused(tmp_path: Path) -> None:
    async with Served(tmp_path, max_sessions=1) as served:
        busy = await served.open()
        await served.start_slow(busy)
        refused = await served.http.post(served.url, json=INIT, headers=STREAM)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
        assert "all busy" in refused.json()["error"]["message"]
        assert await served.ping(busy) == 200


async def test_ending_a_session_cancels_its_running_requests(tmp_path: Path) -> None:
    async with Served(tmp_path) as served:
        session = await served.open()
        await served.start_slow(session)
        ended = await served.http.delete(served.url, headers=session)
        assert ended.status_code == 200
        for _ in range(200):
            if served.cancelled:
                break
            await asyncio.sleep(0.01)
        assert served.cancelled == 1
        assert await served.ping(session) == 404


async def test_avos_client_starts_a_new_session_when_the_server_ended_its_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.md").write_text("still here\n")
    async with Served(tmp_path, session_idle_seconds=60) as served:
        client = MCPHttpServer(url=served.url, timeout_seconds=30)
        await client.start()
        try:
            first = client.session_id
            served.clock.now += 61  # the server lets the idle session go
            result = await client.call_tool("read_file", {"path": "notes.md"})
            assert result["is_error"] is False and "still here" in result["text"]
            assert client.session_id not in (None, first)
            assert list(served.server.sessions) == [client.session_id]
        finally:
            await client.stop()


async def test_a_session_runs_a_bounded_number_of_requests_at_once(tmp_path: Path) -> None:
    async with Served(tmp_path, max_requests=1) as served:
        session = await served.open()
        await served.start_slow(session)
        refused = await served.http.post(served.url, json=PING, headers=session)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert "at most 1 at once" in refused.json()["error"]["message"]
        served.release.set()
        rest = await served.http.get(served.url, headers={**session, "Last-Event-ID": "1/0"})
        assert "slow done" in rest.text
        assert await served.ping(session) == 200  # the slow one finished: room again


def test_avo_serve_mcp_http_takes_its_session_limits_from_the_command_line(
    tmp_path: Path,
) -> None:
    port = free_port()
    command = [sys.executable, "-m", "avo_mcp", "serve-mcp", "--http", "--port", str(port),
               "--workspace-root", str(tmp_path)]  # fmt: skip
    process = subprocess.Popen(
        [*command, "--max-sessions", "1", "--session-idle", "600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process, "avo serve-mcp --http")
        url = f"http://127.0.0.1:{port}/mcp"
        with httpx.Client(timeout=30) as http:
            first = http.post(url, json=INIT, headers=STREAM).headers["mcp-session-id"]
            second = http.post(url, json=INIT, headers=STREAM).headers["mcp-session-id"]
            ping = {**STREAM, "Mcp-Session-Id": first}
            assert http.post(url, json=PING, headers=ping).status_code == 404  # pushed out
            ping["Mcp-Session-Id"] = second
            assert http.post(url, json=PING, headers=ping).status_code == 200
    finally:
        stop_process(process)
    refused = subprocess.run(
        [*command, "--max-sessions", "0"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2 and "--max-sessions 0 must be at least 1" in refused.stderr
