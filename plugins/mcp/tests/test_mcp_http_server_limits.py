"""``avo serve-mcp --http`` holds a slow or stalled client only so long: a request not
sent in time is ``408``, an idle kept-alive connection is closed, a client that leaves
what it is sent unread is cut off, a body too large is refused before it is read, and
connections past the cap are ``503``. Raw sockets on 127.0.0.1; the limits are set
short, and no test measures how long anything took."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from http_wire import Nothing

from avo.tools import FunctionTool
from avo_mcp import AvoMcpServer, build_default_registry
from avo_mcp.http_server import McpHttpServer

WAIT = 20.0  # generous: how long a test waits for the server to act at all
BIG = 24 * 1024 * 1024  # more than the loopback socket buffers hold


@asynccontextmanager
async def served(tmp_path: Path, **options: Any) -> AsyncIterator[McpHttpServer]:
    async def big(args: Nothing) -> str:
        return "x" * BIG

    registry = build_default_registry()
    registry.register(
        FunctionTool(name="big", description="Big.", arguments_model=Nothing, function=big)
    )
    server = McpHttpServer(lambda: AvoMcpServer(registry, workspace_root=tmp_path), **options)
    await server.start("127.0.0.1", 0)
    try:
        yield server
    finally:
        await server.close()


def _port(server: McpHttpServer) -> int:
    assert server._server is not None
    return int(server._server.sockets[0].getsockname()[1])


def _post(body: dict[str, Any], *extra: str) -> bytes:
    data = json.dumps(body).encode()
    head = [
        "POST /mcp HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"Content-Length: {len(data)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


async def _response_head(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)


async def test_a_stalled_request_is_408_and_an_idle_connection_is_closed(tmp_path: Path) -> None:
    async with served(tmp_path, request_seconds=0.2, idle_seconds=0.2) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
        writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # ... and no more
        await writer.drain()
        assert b" 408 " in await _response_head(reader)
        writer.close()

        reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
        assert await asyncio.wait_for(reader.read(), WAIT) == b""  # closed, nothing said
        writer.close()


async def test_a_client_that_leaves_its_stream_unread_is_cut_off(tmp_path: Path) -> None:
    async with served(tmp_path, write_seconds=0.2) as server:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", _port(server)))
        reader, writer = await asyncio.open_connection(sock=sock)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "t"}}}  # fmt: skip
        writer.write(_post(init))
        head = (await _response_head(reader)).decode()
        session = next(
            line.split(":", 1)[1].strip()
            for line in head.split("\r\n")
            if line.lower().startswith("mcp-session-id:")
        )
        length = int(next(h.split(":")[1] for h in head.split("\r\n") if "Length" in h))
        await reader.readexactly(length)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "big", "arguments": {}}}  # fmt: skip
        writer.write(_post(call, f"Mcp-Session-Id: {session}"))
        await writer.drain()  # ... and read nothing more
        for _ in range(int(WAIT / 0.05)):
            if server.connections == 0:
                break
            await asyncio.sleep(0.05)
        assert server.connections == 0  # the server let the connection go
        assert not server.table.busy(session)  # and the session is not held busy
        writer.close()


async def test_a_body_too_large_is_refused_before_it_is_read(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
        writer.write(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n7fffffff\r\n{"  # 2 GiB announced, 1 byte sent
        )
        await writer.drain()
        assert b" 413 " in await _response_head(reader)
        writer.close()

        reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
        writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: lots\r\n\r\n")
        await writer.drain()
        head = await _response_head(reader)
        assert b" 400 " in head
        writer.close()


async def test_connections_past_the_cap_are_503(tmp_path: Path) -> None:
    async with served(tmp_path, max_connections=1) as server:
        _held, holder = await asyncio.open_connection("127.0.0.1", _port(server))
        for _ in range(int(WAIT / 0.05)):
            if server.connections == 1:
                break
            await asyncio.sleep(0.05)
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
        head = await _response_head(reader)
        assert b" 503 " in head and b"Retry-After: 5" in head
        writer.close()
        holder.close()


async def test_closing_the_server_closes_every_connection(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
        for _ in range(int(WAIT / 0.05)):
            if server.connections == 1:
                break
            await asyncio.sleep(0.05)
        await server.close()  # (the idle connection would wait two minutes for a request)
        assert await asyncio.wait_for(reader.read(), WAIT) == b""
        assert server.connections == 0
        writer.close()
