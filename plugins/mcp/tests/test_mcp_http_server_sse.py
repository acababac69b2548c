"""``avo serve-mcp --http`` answers a tools/call as an event stream (SSE) when the client
accepts one: the tool's progress notifications, keep-alive comments while it runs, then
the answer. Driven by the official MCP SDK's streamable-HTTP client over 127.0.0.1."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel

from avo.tool_progress import report_progress
from avo.tools import FunctionTool, ToolRegistry
from avo_mcp import AvoMcpServer, build_default_registry
from avo_mcp.http_server import McpHttpServer

from .conftest import free_port, stop_process, wait_for_port

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
}


class Steps(BaseModel):
    steps: int


async def _crunch(args: Steps) -> str:
    for step in range(1, args.steps + 1):
        report_progress(step, args.steps, f"step {step}")
        await asyncio.sleep(0)
    return f"crunched {args.steps}"


def _registry(*extra: Any) -> ToolRegistry:
    crunch = FunctionTool(
        name="crunch", description="Work in steps.", arguments_model=Steps, function=_crunch
    )
    registry = build_default_registry()
    for tool in (crunch, *extra):
        registry.register(tool)
    return registry


async def _serve(tmp_path: Path, registry: ToolRegistry, **options: Any) -> tuple[Any, str]:
    server = McpHttpServer(lambda: AvoMcpServer(registry, workspace_root=tmp_path), **options)
    _host, port = await server.start("127.0.0.1", 0)
    return server, f"http://127.0.0.1:{port}/mcp"


async def _sdk_call(url: str, name: str, arguments: dict[str, Any]) -> tuple[Any, list, list]:
    """Call one tool with the SDK's client; the progress it got and the content types seen."""
    kinds: list[str] = []
    updates: list[tuple[float, float | None, str | None]] = []

    async def seen(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            kinds.append(response.headers.get("content-type", ""))

    async def progress(done: float, total: float | None, message: str | None) -> None:
        updates.append((done, total, message))

    async with (
        httpx2.AsyncClient(event_hooks={"response": [seen]}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool(name, arguments, progress_callback=progress)
    return result, updates, kinds


async def test_sdk_client_gets_progress_and_the_answer_over_an_event_stream(
    tmp_path: Path,
) -> None:
    server, url = await _serve(tmp_path, _registry())
    try:
        result, updates, kinds = await _sdk_call(url, "crunch", {"steps": 3})
    finally:
        await server.close()
    assert result.is_error is False and result.content[0].text == "crunched 3"
    assert updates == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]
    assert any(kind.startswith("text/event-stream") for kind in kinds)  # the tools/call
    assert any(kind.startswith("application/json") for kind in kinds)  # initialize


async def test_json_response_mode_answers_json_only(tmp_path: Path) -> None:
    server, url = await _serve(tmp_path, _registry(), json_response=True)
    try:
        result, updates, kinds = await _sdk_call(url, "crunch", {"steps": 2})
    finally:
        await server.close()
    assert result.content[0].text == "crunched 2"
    assert updates == []  # nothing could carry them
    assert kinds and not any("event-stream" in kind for kind in kinds)


async def test_a_stream_only_client_a_keep_alive_and_a_client_accepting_neither(
    tmp_path: Path,
) -> None:
    release = asyncio.Event()

    async def slow(args: Steps) -> str:
        await release.wait()
        return "slow done"

    slow_tool = FunctionTool(name="slow", description="Wait.", arguments_model=Steps, function=slow)
    server, url = await _serve(tmp_path, _registry(slow_tool), keep_alive_seconds=0.05)
    stream_only = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            opened = await http.post(url, json=INIT, headers=stream_only)
            assert opened.headers["content-type"] == "text/event-stream"
            assert '"serverInfo"' in opened.text
            headers = {**stream_only, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            listed = await http.post(
                url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
            )
            assert listed.headers["content-type"] == "text/event-stream"
            # a priming event (an id, no data), then the answer with the next id
            assert listed.text.startswith("id: 1/0\ndata:\n\nid: 1/1\nevent: message\ndata: {")
            call = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {"steps": 1}},
            }
            body = ""
            async with http.stream("POST", url, json=call, headers=headers) as answer:
                async for chunk in answer.aiter_text():
                    body += chunk
                    if ": keep-alive" in body:
                        release.set()  # a comment came while the tool ran; let it finish
            assert ": keep-alive\n\n" in body and '"slow done"' in body
            neither = {**headers, "Accept": "text/html"}
            refused = await http.post(url, json=call, headers=neither)
            assert refused.status_code == 406
            assert "accept one" in refused.json()["error"]["message"]
    finally:
        release.set()
        await server.close()


def test_sdk_client_against_avo_serve_mcp_http_subprocess(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("streamed hello\n")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "avo_mcp", "serve-mcp", "--http", "--port", str(port),
         "--workspace-root", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port, process, "avo serve-mcp --http")
        url = f"http://127.0.0.1:{port}/mcp"
        result, _updates, kinds = asyncio.run(_sdk_call(url, "read_file", {"path": "notes.md"}))
    finally:
        stop_process(process)
    assert result.is_error is False and "streamed hello" in result.content[0].text
    assert any(kind.startswith("text/event-stream") for kind in kinds)


@pytest.mark.parametrize("flag", [["--json-response"]])
def test_serve_mcp_json_response_flag(tmp_path: Path, flag: list[str]) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "avo_mcp", "serve-mcp", "--http", "--port", str(port), *flag,
         "--workspace-root", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port, process, "avo serve-mcp --http")
        url = f"http://127.0.0.1:{port}/mcp"
        result, _updates, kinds = asyncio.run(_sdk_call(url, "glob", {"pattern": "*"}))
    finally:
        stop_process(process)
    assert result.is_error is False
    assert kinds and all(kind.startswith("application/json") for kind in kinds if kind)


async def test_stdio_relays_a_served_tools_progress_for_its_token() -> None:
    import json
    import queue

    server = AvoMcpServer(_registry())
    inbox: queue.Queue[str] = queue.Queue()
    written: list[dict[str, Any]] = []

    def request(request_id: int, method: str, params: dict[str, Any]) -> str:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return json.dumps(message) + "\n"

    serving = asyncio.create_task(
        server.serve(inbox.get, lambda line: written.append(json.loads(line)))
    )
    inbox.put(request(1, "initialize", {"protocolVersion": "2025-11-25"}))
    call = {"name": "crunch", "arguments": {"steps": 2}, "_meta": {"progressToken": "t1"}}
    inbox.put(request(2, "tools/call", call))
    inbox.put(request(3, "tools/call", {"name": "crunch", "arguments": {"steps": 2}}))
    inbox.put("")  # end of input: the calls in flight still finish
    await asyncio.wait_for(serving, 30)
    notes = [m["params"] for m in written if m.get("method") == "notifications/progress"]
    assert notes == [
        {"progressToken": "t1", "progress": 1, "total": 2, "message": "step 1"},
        {"progressToken": "t1", "progress": 2, "total": 2, "message": "step 2"},
    ]  # none for the call that sent no token
    answered = [m.get("id") for m in written if "id" in m]
    assert sorted(answered) == [1, 2, 3]
