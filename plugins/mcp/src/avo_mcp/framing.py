"""MCP stdio framing: newline-delimited JSON-RPC 2.0, Content-Length as a fallback.

The MCP stdio transport sends one JSON-RPC message per line (UTF-8, no embedded
newlines). Older avo versions framed messages LSP-style with
``Content-Length: <n>\\r\\n\\r\\n<body>``; readers here still accept that framing
when a message starts with a ``Content-Length`` header, but writers always emit
newline-delimited JSON, which is what every real MCP peer speaks.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, BinaryIO

from avo.exceptions import MCPError

JsonDict = dict[str, Any]

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Largest single message accepted (also the subprocess stream buffer limit)."""

_PREVIEW = 120


class FramingError(MCPError):
    """The peer wrote bytes that are not an MCP JSON-RPC message."""


def encode_message(message: JsonDict) -> bytes:
    """Serialise one JSON-RPC message as a single newline-terminated UTF-8 line."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _preview(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "..."


def decode_message(raw: bytes) -> JsonDict:
    """Parse one message body; raise :class:`FramingError` naming the bad bytes."""
    try:
        message = json.loads(raw)
    except ValueError:
        raise FramingError(f"not a JSON-RPC message: {_preview(raw)!r}") from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise FramingError(f"not a JSON-RPC 2.0 message: {_preview(raw)!r}")
    return message


def read_line(stream: BinaryIO, limit: int = MAX_MESSAGE_BYTES) -> bytes:
    """One line from a blocking binary ``stream`` (b"" at its end), never holding more
    than ``limit`` bytes of it: a longer line is read to its end, dropped, and reported
    with :class:`FramingError`."""
    line = stream.readline(limit + 1)
    if len(line) <= limit or line.endswith(b"\n"):
        return line
    while (rest := stream.readline(limit)) and not rest.endswith(b"\n"):
        pass
    raise FramingError(f"message exceeds {limit} bytes")


def is_content_length_header(line: bytes) -> bool:
    """True when ``line`` opens an LSP-style ``Content-Length`` framed message."""
    return line[:15].lower() == b"content-length:"


def content_length(line: bytes) -> int:
    """The byte count announced by a ``Content-Length`` header line."""
    value = line.split(b":", 1)[1].strip()
    try:
        length = int(value)
    except ValueError:
        raise FramingError(f"bad Content-Length header: {_preview(line)!r}") from None
    if length < 0 or length > MAX_MESSAGE_BYTES:
        raise FramingError(f"Content-Length {length} is outside 0..{MAX_MESSAGE_BYTES}")
    return length


async def read_message(reader: asyncio.StreamReader) -> JsonDict | None:
    """Read the next message from ``reader``; ``None`` at end of stream.

    Blank lines are skipped. A line that is not JSON raises :class:`FramingError`.
    """
    while True:
        try:
            line = await reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            raise FramingError(f"message exceeds {MAX_MESSAGE_BYTES} bytes") from None
        if not line:
            return None
        if not line.strip():
            continue
        if is_content_length_header(line):
            length = content_length(line)
            # Skip the remaining headers up to the blank separator line.
            while True:
                header = await reader.readline()
                if not header:
                    return None
                if not header.strip():
                    break
            try:
                body = await reader.readexactly(length)
            except asyncio.IncompleteReadError:
                return None
            return decode_message(body)
        return decode_message(line)


def error_response(request_id: Any, code: int, message: str) -> JsonDict:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def result_response(request_id: Any, result: JsonDict) -> JsonDict:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002

HANDSHAKE_PROTOCOL_VERSIONS: tuple[str, ...] = (
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
)
"""Protocol revisions negotiated with the ``initialize`` handshake, oldest first."""

LATEST_PROTOCOL_VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]

__all__ = [
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_PROTOCOL_VERSION",
    "MAX_MESSAGE_BYTES",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SERVER_NOT_INITIALIZED",
    "FramingError",
    "JsonDict",
    "content_length",
    "decode_message",
    "encode_message",
    "error_response",
    "is_content_length_header",
    "read_line",
    "read_message",
    "result_response",
]
