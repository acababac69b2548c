"""Server-sent events as the MCP streamable HTTP transport uses them.

A server may open a stream with a *priming* event (an ``id:`` and an empty
``data:``) so the client has an event id to resume from, send ``retry:`` to
say how long to wait before reconnecting, and close the stream at any time;
the client then reconnects with ``GET`` and ``Last-Event-ID``. This parser
follows the WHATWG event-stream rules: fields ``data``, ``event``, ``id``,
``retry``; comment lines start with ``:``; an event is dispatched at a blank
line; the last event id is updated even by an event without data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from avo.exceptions import MCPError
from avo_mcp.framing import MAX_MESSAGE_BYTES


@dataclass(frozen=True)
class Event:
    """One dispatched event."""

    data: str
    event: str = "message"
    id: str | None = None


class EventStreamState:
    """What survives a reconnection: the last event id and the retry delay."""

    def __init__(
        self, retry_seconds: float = 1.0, max_event: int = MAX_MESSAGE_BYTES, server: str = "?"
    ) -> None:
        self.server = server
        """The MCP server's name, for errors."""
        self.last_event_id: str | None = None
        self.retry_seconds = retry_seconds
        self.max_event = max_event
        """The most characters of data one event may carry (past that MCPError)."""

    async def events(self, lines: AsyncIterator[str]) -> AsyncIterator[Event]:
        """Parse ``lines`` (without line endings) into events; updates the state."""
        data: list[str] = []
        size = 0
        event_type = ""
        pending_id: str | None = None
        async for line in lines:
            if not line:
                if pending_id is not None:
                    self.last_event_id = pending_id or None
                    pending_id = None
                if data:
                    yield Event("\n".join(data), event_type or "message", self.last_event_id)
                data = []
                size = 0
                event_type = ""
                continue
            if line.startswith(":"):
                continue  # a comment (keep-alive)
            field, sep, value = line.partition(":")
            if sep and value.startswith(" "):
                value = value[1:]
            if field == "data":
                data.append(value)
                size += len(value) + 1
                if size > self.max_event:
                    raise MCPError(
                        f"MCP server {self.server!r} sent an event with over {self.max_event} "
                        "characters of data"
                    )
            elif field == "event":
                event_type = value
            elif field == "id":
                if "\x00" not in value:
                    pending_id = value
            elif field == "retry" and value.isdigit():
                self.retry_seconds = int(value) / 1000.0
        # An unterminated last event (and its id) is discarded, as the rules say.


__all__ = ["Event", "EventStreamState"]
