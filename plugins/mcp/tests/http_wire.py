"""What the tests of ``avo serve-mcp --http`` send and read: JSON-RPC requests and SSE events."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

STREAM = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
"""Headers of a POST that takes an answer as JSON or as an event stream."""


class Nothing(BaseModel):
    """The arguments of a test tool that takes none."""


def init_request(version: str = "2025-11-25") -> dict[str, Any]:
    """``initialize`` with id 1, for protocol ``version``."""
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def call_request(request_id: int, name: str, token: str | None = None) -> dict[str, Any]:
    """``tools/call`` of ``name`` without arguments, asking for progress under ``token``."""
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if token:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(id, data) of each event with an id or data (comments left out)."""
    found = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) if ": " in line else (line.rstrip(":"), "")
            for line in block.splitlines()
            if line and not line.startswith(":")
        )
        if fields:
            found.append((fields.get("id"), fields.get("data", "")))
    return found
