"""Reading what a remote MCP server sends over HTTP, in bounded memory.

A server is a third party: a body, a line of an event stream, or an event
larger than :data:`~avo_mcp.framing.MAX_MESSAGE_BYTES` (16 MiB, the largest
message avo takes on any transport) is refused with an :class:`MCPError`
instead of being buffered whole first.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from avo.exceptions import MCPError
from avo_mcp.framing import MAX_MESSAGE_BYTES

_NEWLINE = re.compile(r"\r\n|\r|\n")


async def lines(
    chunks: AsyncIterator[str], server: str, limit: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[str]:
    """The lines of an event stream from MCP server ``server`` (CRLF, LF or CR ends
    one), none longer than ``limit`` characters."""
    buffer = ""
    async for chunk in chunks:
        buffer += chunk
        held = buffer.endswith("\r")  # perhaps the first half of a CRLF
        parts = _NEWLINE.split(buffer[:-1] if held else buffer)
        buffer = parts.pop() + ("\r" if held else "")
        for line in parts:
            yield line
        if len(buffer) > limit:
            raise MCPError(
                f"MCP server {server!r} sent an event-stream line longer than {limit} characters"
            )
    if buffer.rstrip("\r"):
        yield buffer.rstrip("\r")


async def body(response: Any, server: str, limit: int = MAX_MESSAGE_BYTES) -> bytes:
    """The whole body of an httpx streaming ``response`` from MCP server ``server``,
    refused past ``limit`` bytes."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise MCPError(
            f"MCP server {server!r} sent a body of {declared} bytes; avo takes at most {limit}"
        )
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > limit:
            raise MCPError(f"MCP server {server!r} sent a body larger than {limit} bytes")
    return bytes(data)


__all__ = ["body", "lines"]
