"""HTTP/1.1 as ``avo serve-mcp --http`` reads and writes it, with time limits.

A client gets :data:`IDLE_SECONDS` to start its next request on a kept-alive
connection (then the connection is closed, quietly), :data:`REQUEST_SECONDS`
to send the rest of a request once it began (then ``408``), and must take
what the server writes within :data:`WRITE_SECONDS` (then the connection is
cut; an event stream it was reading can be resumed). A slow or stalled
client thus holds a connection, and what is written to it, only that long.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from avo.exceptions import MCPError
from avo_mcp.framing import MAX_MESSAGE_BYTES

IDLE_SECONDS = 120.0
"""How long a kept-alive connection may wait for its next request."""
REQUEST_SECONDS = 30.0
"""How long a client may take to send a request once its first line came."""
WRITE_SECONDS = 30.0
"""How long a client may leave what the server wrote unread before it is cut off."""
MAX_HEADER_LINES = 100
MAX_LINE = 16 * 1024
REASONS = {
    200: "OK",
    202: "Accepted",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    408: "Request Timeout",
    411: "Length Required",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    503: "Service Unavailable",
}

Request = tuple[str, str, dict[str, str], bytes]
"""Method, target, headers (names in lower case) and body."""


class HttpError(MCPError):
    """A request ``avo serve-mcp --http`` answers with the HTTP error ``status`` (and
    extra ``headers``); the message says what was wrong and what to send instead."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


async def read_request(
    reader: asyncio.StreamReader,
    *,
    idle_seconds: float = IDLE_SECONDS,
    request_seconds: float = REQUEST_SECONDS,
) -> Request | None:
    """The next request; None when the client closed the connection or sent nothing
    for ``idle_seconds``. Raises :class:`HttpError` for a malformed, too large or too
    slow request."""
    try:
        async with asyncio.timeout(idle_seconds):
            line = await reader.readline()
    except TimeoutError:
        return None
    except ValueError:  # a line past MAX_LINE
        raise HttpError(400, f"request line longer than {MAX_LINE} bytes") from None
    if not line:
        return None
    try:
        async with asyncio.timeout(request_seconds):
            return await _rest_of_request(line, reader)
    except TimeoutError:
        raise HttpError(
            408, f"the request was not sent within {request_seconds:g} seconds"
        ) from None
    except ValueError:
        problem = f"malformed request (or a line longer than {MAX_LINE} bytes)"
        raise HttpError(400, problem) from None


async def _rest_of_request(line: bytes, reader: asyncio.StreamReader) -> Request:
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, "malformed request line")
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        header = await reader.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    else:
        raise HttpError(400, "too many header lines")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    else:
        length = headers.get("content-length", "0").strip() or "0"
        if not length.isdigit():
            raise HttpError(400, f"Content-Length {length!r} is not a number of bytes")
        if int(length) > MAX_MESSAGE_BYTES:
            raise HttpError(413, f"body larger than {MAX_MESSAGE_BYTES} bytes")
        body = await reader.readexactly(int(length)) if int(length) else b""
    return parts[0].upper(), parts[1], headers, body


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return bytes(body)
        if len(body) + size > MAX_MESSAGE_BYTES:  # before reading it, not after
            raise HttpError(413, f"body larger than {MAX_MESSAGE_BYTES} bytes")
        body += await reader.readexactly(size)
        await reader.readline()


async def drained(writer: asyncio.StreamWriter, seconds: float = WRITE_SECONDS) -> None:
    """Wait until the client took what was written; cut the connection (and raise
    ConnectionError) when it has not within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            await writer.drain()
    except TimeoutError:
        writer.transport.abort()
        raise ConnectionError(f"the client read nothing for {seconds:g} seconds") from None


def write_response(
    writer: asyncio.StreamWriter,
    status: int,
    headers: dict[str, str],
    payload: Any,
    *,
    keep_alive: bool,
) -> None:
    """Write one response, its ``payload`` (if any) as a JSON body."""
    body = b"" if payload is None else json.dumps(payload, ensure_ascii=False).encode("utf-8")
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'OK')}"]
    if payload is not None:
        lines.append("Content-Type: application/json")
    lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)


__all__ = [
    "IDLE_SECONDS",
    "MAX_HEADER_LINES",
    "MAX_LINE",
    "REASONS",
    "REQUEST_SECONDS",
    "WRITE_SECONDS",
    "HttpError",
    "Request",
    "drained",
    "read_request",
    "write_response",
]
