"""The event streams of ``avo serve-mcp --http``, and how a client resumes one.

A POST answered as ``text/event-stream`` is one stream: each request's
notifications, then its answer, one ``message`` event each; it ends after the
last answer. Within a session each stream has a number, and each event on it
the id ``<stream>/<n>`` (``n`` counts from 1). To a client that negotiated
protocol 2025-11-25 or later the stream opens with a priming event (id
``<stream>/0``, empty data), so it has an id to resume from before the
first message.

The events are kept with the stream, not only written: when the connection
drops, its requests keep running, and a client that reconnects with ``GET``
and ``Last-Event-ID: <stream>/<n>`` (same session) gets the events after
``n`` on the new response, then the rest as they come, until the last
answer. A resumption never carries another stream's events. A session keeps
its last :data:`KEPT_STREAMS` streams; an id naming a stream it no longer
keeps (or one of another session) is answered ``404``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from avo_mcp.framing import INVALID_REQUEST, JsonDict, error_response

KEPT_STREAMS = 16
"""How many of a session's streams stay resumable (the oldest is forgotten first)."""
PRIMING_SINCE = "2025-11-25"
"""The first protocol revision whose clients read a priming event (an id, no data)."""


class EventStream:
    """The answer to a POST as ``text/event-stream`` (see the module docstring).

    ``handlers`` answer one request each (called with the stream, so their
    notifications go on it first); ``number`` is the stream's number in its
    session (None: its events carry no ids, as the answer to ``initialize``).
    """

    def __init__(
        self, handlers: list[Any], number: int | None = None, *, priming: bool = False
    ) -> None:
        self.number = number
        self.priming = priming and number is not None
        self.events: list[JsonDict] = []
        self._open = 0
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        for handler in handlers:
            self._open += 1
            self._tasks.append(asyncio.get_running_loop().create_task(self._answer(handler)))

    @classmethod
    def of(cls, reply: JsonDict) -> EventStream:
        """A stream holding one answer already known."""
        stream = cls([])
        stream.events.append(reply)
        return stream

    async def _answer(self, handler: Any) -> None:
        try:
            reply = await handler(self)
        except Exception as exc:  # (a handler answers errors itself; never leave it open)
            reply = error_response(None, INVALID_REQUEST, f"{type(exc).__name__}: {exc}")
        self._add(reply, final=True)

    def send(self, message: JsonDict) -> None:
        """Put a notification on the stream (before its request's answer)."""
        self._add(message, final=False)

    def _add(self, message: JsonDict | None, *, final: bool) -> None:
        if message is not None:
            self.events.append(message)
        if final:
            self._open -= 1
        self._changed.set()

    @property
    def finished(self) -> bool:
        """Every request of the stream has its answer on it."""
        return self._open == 0

    def event_id(self, index: int) -> str | None:
        """The id of ``events[index]`` (``-1``: the priming event); None without a number."""
        return None if self.number is None else f"{self.number}/{index + 1}"

    async def event(self, index: int, idle: float) -> JsonDict | None:
        """``events[index]`` once it is there; None after ``idle`` seconds without it.

        Raises StopAsyncIteration when the stream finished before ``index``."""
        while index >= len(self.events):
            if self.finished:
                raise StopAsyncIteration
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), idle)
            except TimeoutError:
                return None
        return self.events[index]


@dataclass(frozen=True)
class Resumed:
    """A stream resumed by ``GET`` + ``Last-Event-ID``: its events from ``start`` on."""

    stream: EventStream
    start: int


class SessionStreams:
    """One session's resumable streams, by number (the newest :data:`KEPT_STREAMS`)."""

    def __init__(self, protocol_version: str | None) -> None:
        self.priming = (protocol_version or "") >= PRIMING_SINCE
        self.streams: dict[int, EventStream] = {}
        self._next = 1

    def open(self, handlers: list[Any]) -> EventStream:
        """A new numbered stream answering ``handlers``."""
        stream = EventStream(handlers, self._next, priming=self.priming)
        self.streams[self._next] = stream
        self._next += 1
        while len(self.streams) > KEPT_STREAMS:
            del self.streams[min(self.streams)]
        return stream

    def resume(self, last_event_id: str) -> Resumed | None:
        """Where ``Last-Event-ID`` resumes: None when it names no stream kept here.

        Raises ValueError when the id is not ``<stream>/<n>`` or names an event
        never sent."""
        number, sep, index = last_event_id.strip().partition("/")
        if not (sep and number.isdigit() and index.isdigit()):
            raise ValueError(
                f"Last-Event-ID {last_event_id!r} is not an event id of this server "
                "('<stream>/<n>', as its events carry)"
            )
        stream = self.streams.get(int(number))
        if stream is None:
            return None
        if int(index) > len(stream.events):
            raise ValueError(
                f"Last-Event-ID {last_event_id!r} names an event stream {number} has not sent "
                f"(it sent {len(stream.events)})"
            )
        return Resumed(stream, int(index))


async def write_stream(
    writer: asyncio.StreamWriter,
    headers: dict[str, str],
    stream: EventStream,
    keep_alive: float,
    *,
    start: int | None = None,
) -> None:
    """Send ``stream``'s events as a chunked ``text/event-stream`` response, a comment
    when idle: a new stream from its priming event (if it has one), a resumed one
    from ``start``."""
    lines = [
        "HTTP/1.1 200 OK",
        "Content-Type: text/event-stream",
        "Cache-Control: no-cache",
        "Transfer-Encoding: chunked",
        "Connection: keep-alive",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    if stream.priming and start is None:
        _chunk(writer, f"id: {stream.event_id(-1)}\ndata:\n\n".encode())
    index = start or 0
    while True:
        try:
            message = await stream.event(index, keep_alive)
        except StopAsyncIteration:
            break
        if message is None:
            _chunk(writer, b": keep-alive\n\n")
        else:
            event_id = stream.event_id(index)
            head = f"id: {event_id}\n" if event_id is not None else ""
            data = json.dumps(message, ensure_ascii=False)
            _chunk(writer, f"{head}event: message\ndata: {data}\n\n".encode())
            index += 1
        await writer.drain()
    writer.write(b"0\r\n\r\n")


def _chunk(writer: asyncio.StreamWriter, event: bytes) -> None:
    writer.write(f"{len(event):x}\r\n".encode("ascii") + event + b"\r\n")


__all__ = [
    "KEPT_STREAMS",
    "PRIMING_SINCE",
    "EventStream",
    "Resumed",
    "SessionStreams",
    "write_stream",
]
