"""What ``avo serve-mcp --http`` keeps per resumable stream and per session is bounded:
a stream keeps the latest progress of each token and a bounded number of notifications,
never dropping an answer; a session keeps its running streams and its newest finished
ones; a stream it no longer keeps is ``405`` (the session lives on). Over 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from http_wire import STREAM, Nothing, call_request, init_request, sse_events

from avo.tool_progress import report_progress
from avo.tools import FunctionTool
from avo_mcp import AvoMcpServer, build_default_registry
from avo_mcp.http_server import McpHttpServer
from avo_mcp.http_stream import KEPT_STREAMS, MAX_STREAM_NOTES, EventStream

REPORTS = 5000


def _served(tmp_path: Path, release: asyncio.Event) -> McpHttpServer:
    async def chatty(args: Nothing) -> str:
        for step in range(1, REPORTS + 1):
            report_progress(step, REPORTS, f"step {step}")
        await release.wait()
        return "chatty done"

    async def slow(args: Nothing) -> str:
        await release.wait()
        return "slow done"

    registry = build_default_registry()
    for name, function in (("chatty", chatty), ("slow", slow)):
        registry.register(
            FunctionTool(name=name, description=name, arguments_model=Nothing, function=function)
        )
    return McpHttpServer(lambda: AvoMcpServer(registry, workspace_root=tmp_path))


async def _drop_after_priming(http: httpx.AsyncClient, url: str, call: Any, headers: Any) -> None:
    async with http.stream("POST", url, json=call, headers=headers) as response:
        async for chunk in response.aiter_text():
            if "data:\n\n" in chunk:
                break  # the priming event came: drop the connection


async def test_a_stream_keeps_only_the_latest_progress_and_every_answer(tmp_path: Path) -> None:
    release = asyncio.Event()
    server = _served(tmp_path, release)
    _host, port = await server.start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(url, json=init_request(), headers=STREAM)
            session_id = opened.headers["mcp-session-id"]
            session = {**STREAM, "Mcp-Session-Id": session_id}
            await _drop_after_priming(http, url, call_request(2, "chatty", "t"), session)
            stream = server.streams[session_id].streams[1]
            for _ in range(100):
                if stream.sent >= REPORTS:
                    break
                await asyncio.sleep(0.01)
            assert stream.sent == REPORTS  # every report was put on the stream ...
            assert len(stream.events) <= MAX_STREAM_NOTES  # ... a bounded number is kept
            assert stream.kept_bytes < MAX_STREAM_NOTES * 200
            release.set()

            rest = sse_events(
                (await http.get(url, headers={**session, "Last-Event-ID": "1/0"})).text
            )
            assert 2 <= len(rest) <= MAX_STREAM_NOTES + 1
            assert [event_id for event_id, _ in rest[-2:]] == [f"1/{REPORTS}", f"1/{REPORTS + 1}"]
            assert json.loads(rest[-2][1])["params"]["progress"] == REPORTS  # the latest is there
            assert json.loads(rest[-1][1])["result"]["content"][0]["text"] == "chatty done"
            # an id of a progress event dropped since: the kept events after it
            later = sse_events(
                (await http.get(url, headers={**session, "Last-Event-ID": "1/7"})).text
            )
            assert later == rest
    finally:
        release.set()
        await server.close()


async def test_notifications_are_bounded_and_answers_never_dropped() -> None:
    gate = asyncio.Event()

    async def noisy(stream: EventStream) -> dict[str, Any]:
        for n in range(MAX_STREAM_NOTES + 50):  # log lines: no token to coalesce by
            stream.send({"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "info", "data": f"line {n}"}})  # fmt: skip
        await gate.wait()
        return {"jsonrpc": "2.0", "id": 7, "result": {}}

    stream = EventStream([noisy], 1)
    await asyncio.sleep(0)
    assert len(stream.events) == MAX_STREAM_NOTES
    assert b"line 50" in stream.events[0].data  # the oldest went first
    for step in range(1, 4):  # past the bound, replaced progress goes before anything else
        stream.send({"jsonrpc": "2.0", "method": "notifications/progress",
                     "params": {"progressToken": "p", "progress": step}})  # fmt: skip
    assert sum(b"notifications/progress" in e.data for e in stream.events) == 1
    assert len(stream.events) == MAX_STREAM_NOTES and b"line 51" in stream.events[0].data
    gate.set()
    await asyncio.gather(*stream.tasks)
    assert stream.finished and stream.events[-1].kept and b'"id": 7' in stream.events[-1].data


async def test_a_forgotten_stream_is_405_and_a_running_one_is_kept(tmp_path: Path) -> None:
    release = asyncio.Event()
    server = _served(tmp_path, release)
    _host, port = await server.start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(url, json=init_request(), headers=STREAM)
            session = {**STREAM, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            await _drop_after_priming(http, url, call_request(2, "slow"), session)  # stream 1 runs
            glob = {"name": "glob", "arguments": {"pattern": "*"}}
            for request_id in range(3, 3 + KEPT_STREAMS + 2):  # streams 2..: finished
                call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": glob}
                assert (await http.post(url, json=call, headers=session)).status_code == 200

            forgotten = await http.get(url, headers={**session, "Last-Event-ID": "2/1"})
            assert forgotten.status_code == 405  # not 404: the session did not end
            assert "no longer keeps" in forgotten.json()["error"]["message"]
            newest = 2 + KEPT_STREAMS + 1
            kept = await http.get(url, headers={**session, "Last-Event-ID": f"{newest}/0"})
            assert kept.status_code == 200 and len(sse_events(kept.text)) == 1
            unopened = await http.get(url, headers={**session, "Last-Event-ID": "99/0"})
            assert unopened.status_code == 400 and "has not opened" in unopened.text

            release.set()  # the oldest stream still ran all along: its answer is there
            resumed = await http.get(url, headers={**session, "Last-Event-ID": "1/0"})
            running = sse_events(resumed.text)
            assert json.loads(running[-1][1])["result"]["content"][0]["text"] == "slow done"
            pinged = await http.post(
                url, json={"jsonrpc": "2.0", "id": 99, "method": "ping"}, headers=session
            )
            assert pinged.status_code == 200  # the session lives on
    finally:
        release.set()
        await server.close()
