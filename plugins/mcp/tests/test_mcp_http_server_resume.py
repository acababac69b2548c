"""``avo serve-mcp --http`` event streams are resumable: each event has an id, and a client
whose connection dropped gets the rest of that stream with ``GET`` + ``Last-Event-ID``
(the events after that id, then the rest live), never another stream's. Over 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from http_wire import STREAM, Nothing, call_request, init_request, sse_events

from avo.exceptions import MCPError
from avo.tool_progress import report_progress
from avo.tools import FunctionTool
from avo_mcp import AvoMcpServer, build_default_registry
from avo_mcp.http_client import MCPHttpServer
from avo_mcp.http_server import McpHttpServer

from .conftest import free_port, stop_process, wait_for_port


async def test_a_dropped_stream_resumes_after_its_last_event_id(tmp_path: Path) -> None:
    release = asyncio.Event()

    async def halves(args: Nothing) -> str:
        report_progress(1, 2, "first half")
        await release.wait()
        report_progress(2, 2, "second half")
        return "both halves"

    registry = build_default_registry()
    registry.register(
        FunctionTool(name="halves", description="Two halves.", arguments_model=Nothing,
                     function=halves)
    )  # fmt: skip
    server = McpHttpServer(lambda: AvoMcpServer(registry, workspace_root=tmp_path))
    _host, port = await server.start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(url, json=init_request(), headers=STREAM)
            session = {**STREAM, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            seen = ""
            async with http.stream(
                "POST", url, json=call_request(2, "halves", "t"), headers=session
            ) as r:
                async for chunk in r.aiter_text():
                    seen += chunk
                    if "first half" in seen and seen.endswith("\n\n"):
                        break  # drop the connection while the tool still runs
            first = sse_events(seen)
            assert first[0] == ("1/0", "")  # the priming event: an id to resume from
            assert first[1][0] == "1/1" and "first half" in first[1][1]
            release.set()  # the tool goes on although nobody reads its stream

            resume = {**session, "Last-Event-ID": "1/1"}
            rest = sse_events((await http.get(url, headers=resume)).text)
            assert [event_id for event_id, _ in rest] == ["1/2", "1/3"]
            assert "second half" in rest[0][1] and "first half" not in rest[0][1]
            answer = json.loads(rest[1][1])
            assert answer["id"] == 2 and answer["result"]["content"][0]["text"] == "both halves"

            again = sse_events(
                (await http.get(url, headers={**session, "Last-Event-ID": "1/0"})).text
            )
            assert [event_id for event_id, _ in again] == ["1/1", "1/2", "1/3"]  # all of it

            other = await http.post(url, json=init_request(), headers=STREAM)  # another session
            elsewhere = {**STREAM, "Mcp-Session-Id": other.headers["mcp-session-id"]}
            refused = await http.get(url, headers={**elsewhere, "Last-Event-ID": "1/1"})
            assert refused.status_code == 400  # never another session's (or stream's) events
            assert "which this session has not opened" in refused.json()["error"]["message"]
            bad = await http.get(url, headers={**session, "Last-Event-ID": "yesterday"})
            assert bad.status_code == 400 and "'<stream>/<n>'" in bad.json()["error"]["message"]
            ahead = await http.get(url, headers={**session, "Last-Event-ID": "1/9"})
            assert ahead.status_code == 400 and "it sent 3" in ahead.json()["error"]["message"]
            plain = await http.get(url, headers=session)
            assert plain.status_code == 405  # no standalone stream without an id to resume
    finally:
        release.set()
        await server.close()


async def test_an_older_client_gets_ids_without_a_priming_event(tmp_path: Path) -> None:
    server = McpHttpServer(lambda: AvoMcpServer(build_default_registry(), workspace_root=tmp_path))
    _host, port = await server.start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(url, json=init_request("2025-06-18"), headers=STREAM)
            session = {**STREAM, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            call = {
                **call_request(2, "glob"),
                "params": {"name": "glob", "arguments": {"pattern": "*"}},
            }
            answered = await http.post(url, json=call, headers=session)
            assert [event_id for event_id, _ in sse_events(answered.text)] == ["1/1"]
    finally:
        await server.close()


class _CuttingProxy:
    """Forwards 127.0.0.1 connections to the server; the first ``tools/call``'s answer
    stream is cut (connection aborted) right after its first event, the priming one."""

    def __init__(self, port: int, retry_ms: int | None = None) -> None:
        self.port = port
        self.retry_ms = retry_ms  # also send ``retry:`` (ms) before the cut
        self.cuts = 0
        self.handlers: set[asyncio.Task[Any]] = set()
        self.writers: list[asyncio.StreamWriter] = []

    async def close(self) -> None:
        """End every forwarded connection (none is left for the loop's end)."""
        for task in self.handlers:
            task.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)
        for writer in self.writers:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        self.writers.append(writer)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers.append(up_writer)
        armed = False

        async def to_server() -> None:
            nonlocal armed
            while data := await reader.read(65536):
                if b'"tools/call"' in data and self.cuts == 0:
                    armed = True
                up_writer.write(data)
                await up_writer.drain()

        async def to_client() -> None:
            buffered = b""
            while data := await up_reader.read(65536):
                if not armed:
                    writer.write(data)
                    await writer.drain()
                    continue
                buffered += data
                end = buffered.find(b"data:\n\n")
                if end >= 0:  # the priming event went through: now the line goes down
                    writer.write(buffered[: end + len(b"data:\n\n")])
                    if self.retry_ms is not None:  # one more chunk: the priming one ends first
                        retry = f"retry: {self.retry_ms}\n\n".encode()
                        writer.write(b"\r\n" + f"{len(retry):x}\r\n".encode() + retry + b"\r\n")
                    await writer.drain()
                    self.cuts += 1
                    writer.transport.abort()
                    up_writer.transport.abort()
                    return

        sending = asyncio.ensure_future(to_server())
        try:
            await to_client()
        except (ConnectionError, OSError):
            pass
        finally:
            sending.cancel()
            with contextlib.suppress(BaseException):
                await sending


def test_avos_client_resumes_a_dropped_stream_of_avo_serve_mcp_http(tmp_path: Path) -> None:
    """avo's own HTTP client against the real ``avo serve-mcp --http`` process: the call's
    connection drops after the priming event; the client resumes and gets the answer."""
    (tmp_path / "notes.md").write_text("resumed hello\n")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "avo_mcp", "serve-mcp", "--http", "--port", str(port),
         "--workspace-root", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip

    async def scenario() -> tuple[Any, int]:
        proxy = _CuttingProxy(port)
        listening = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
        proxy_port = listening.sockets[0].getsockname()[1]
        client = MCPHttpServer(url=f"http://localhost:{proxy_port}/mcp", timeout_seconds=30)
        try:
            await client.start()
            result = await client.call_tool("read_file", {"path": "notes.md"})
        finally:
            await client.stop()
            listening.close()
            await listening.wait_closed()
            await proxy.close()
        return result, proxy.cuts

    try:
        wait_for_port(port, process, "avo serve-mcp --http")
        result, cuts = asyncio.run(scenario())
    finally:
        stop_process(process)
    assert cuts == 1  # the stream really dropped
    assert result["is_error"] is False and "resumed hello" in result["text"]


async def test_a_resumption_takes_the_stream_from_the_connection_it_had(tmp_path: Path) -> None:
    """A client that resumes while the first connection still looks open (half-open TCP)
    gets the rest on the new one; the old one is closed and carries none of it."""
    release = asyncio.Event()

    async def slow(args: Nothing) -> str:
        await release.wait()
        return "slow done"

    registry = build_default_registry()
    registry.register(
        FunctionTool(name="slow", description="Wait.", arguments_model=Nothing, function=slow)
    )
    server = McpHttpServer(lambda: AvoMcpServer(registry, workspace_root=tmp_path))
    _host, port = await server.start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(url, json=init_request(), headers=STREAM)
            session = {**STREAM, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            body = json.dumps(call_request(2, "slow")).encode()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            head = "".join(f"{k}: {v}\r\n" for k, v in session.items())
            writer.write(
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            first = await asyncio.wait_for(reader.readuntil(b"data:\n\n"), 30)
            assert b"id: 1/0" in first  # primed; this connection stays open

            async def resumed() -> str:
                headers = {**session, "Last-Event-ID": "1/0"}
                return (await http.get(url, headers=headers)).text

            second = asyncio.ensure_future(resumed())
            rest_of_first = await asyncio.wait_for(reader.read(), 30)  # closed by the server
            release.set()
            assert "slow done" in await second
            assert b"slow done" not in rest_of_first
            writer.close()
    finally:
        release.set()
        await server.close()


async def test_a_call_resumes_in_its_own_session_even_after_a_new_one_began(
    tmp_path: Path,
) -> None:
    """avo's client: a call's stream drops, the server ends the session, another call
    starts a new one (404, initialize again); the first call resumes in *its* session
    (ended: 404, the answer is lost), never in the new one, whose streams are others'."""
    release = asyncio.Event()

    async def slow(args: Nothing) -> str:
        await release.wait()
        return "slow done"

    registry = build_default_registry()
    registry.register(
        FunctionTool(name="slow", description="Wait.", arguments_model=Nothing, function=slow)
    )
    server = McpHttpServer(lambda: AvoMcpServer(registry, workspace_root=tmp_path))
    _host, port = await server.start("127.0.0.1", 0)
    proxy = _CuttingProxy(port, retry_ms=3000)
    listening = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy_port = listening.sockets[0].getsockname()[1]
    client = MCPHttpServer(url=f"http://localhost:{proxy_port}/mcp", timeout_seconds=60)
    try:
        await client.start()
        first_session = client.session_id
        call = asyncio.ensure_future(client.call_tool("slow", {}))
        for _ in range(600):
            if proxy.cuts:
                break
            await asyncio.sleep(0.05)
        assert proxy.cuts == 1  # the call waits 3 s before it resumes
        async with httpx.AsyncClient(timeout=30) as http:
            ended = await http.delete(
                f"http://127.0.0.1:{port}/mcp", headers={"Mcp-Session-Id": str(first_session)}
            )
            assert ended.status_code == 200
        other = await client.call_tool("glob", {"pattern": "*"})  # 404: a new session
        assert other["is_error"] is False and client.session_id != first_session
        try:
            await call
        except MCPError as exc:
            assert f"ended session {first_session}" in str(exc) and "lost" in str(exc)
        else:
            raise AssertionError("the call resumed in a session that is not its own")
    finally:
        release.set()
        await client.stop()
        listening.close()
        await listening.wait_closed()
        await proxy.close()
        await server.close()
