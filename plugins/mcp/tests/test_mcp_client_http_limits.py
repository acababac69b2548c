"""avo's HTTP client reads what a remote MCP server sends in bounded memory: a body
announced (or sent) past 16 MiB, an event-stream line or event past it, is refused
with a clear error instead of being buffered first. A hand-written HTTP server on
127.0.0.1 misbehaves on purpose."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from avo.exceptions import MCPError
from avo_mcp.framing import MAX_MESSAGE_BYTES
from avo_mcp.http_client import MCPHttpServer

Reply = Callable[[asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def misbehaving(reply: Reply) -> AsyncIterator[str]:
    """A server that reads one request and answers it with ``reply``, then holds on."""
    held: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        sizes = [h.split(b":")[1] for h in head.split(b"\r\n") if b"content-length" in h.lower()]
        length = int(sizes[0]) if sizes else 0
        await reader.readexactly(length)
        held.append(writer)
        await reply(writer)

    listening = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        for writer in held:
            writer.transport.abort()
        listening.close()
        await listening.wait_closed()


async def _start(url: str) -> MCPError:
    client = MCPHttpServer(url=url, timeout_seconds=20, listen=False)
    with pytest.raises(MCPError) as caught:
        await client.start()
    return caught.value


async def test_a_body_announced_too_large_is_refused_unread() -> None:
    async def reply(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: 99999999999\r\n\r\n{"
        )

    async with misbehaving(reply) as url:
        error = await _start(url)
    assert "sent a body of 99999999999 bytes; avo takes at most" in str(error)


async def test_an_endless_event_stream_line_is_refused() -> None:
    async def reply(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        piece = b"data: " + b"x" * (1024 * 1024)  # ... and never a newline
        for _ in range(MAX_MESSAGE_BYTES // len(piece) + 2):
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()
            piece = b"x" * (1024 * 1024)

    async with misbehaving(reply) as url:
        error = await _start(url)
    assert "sent an event-stream line longer than" in str(error)


async def test_an_endless_event_is_refused() -> None:
    async def reply(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        piece = (b"data: " + b"x" * 1000 + b"\n") * 1000  # lines, but never a blank one
        for _ in range(MAX_MESSAGE_BYTES // len(piece) + 2):
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()

    async with misbehaving(reply) as url:
        error = await _start(url)
    assert "sent an event with over" in str(error) and "characters of data" in str(error)
