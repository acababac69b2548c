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
answer. A resumption never carries another stream's events, and a stream is
written on one connection at a time: a resumption takes it from the
connection it had (which is closed), so no event goes out twice.

What is kept is bounded: a stream keeps at most :data:`MAX_STREAM_NOTES`
notifications in :data:`MAX_STREAM_NOTE_BYTES`. Past that, first every
progress event a newer one of the same ``progressToken`` replaced is dropped
(only the latest progress matters), then the oldest notifications; answers
and requests of the server are never dropped. A resumption after an event
no longer kept gets the kept events after it. A session keeps every stream
whose requests still run, and of the finished ones the newest
:data:`KEPT_STREAMS` within :data:`KEPT_BYTES` (the oldest forgotten first;
the newest always kept). An id
naming a stream the session no longer keeps cannot be resumed
(:class:`StreamForgotten`: the server answers ``405``, the MCP answer to a
``GET`` it offers no stream for, and not ``404``, which would tell the client
its session ended).
"""

from __future__ import annotations

import asyncio
import bisect
import json
from dataclasses import dataclass
from typing import Any

from avo.exceptions import MCPError
from avo_mcp.framing import INVALID_REQUEST, JsonDict, error_response
from avo_mcp.http_wire import WRITE_SECONDS, drained

KEPT_STREAMS = 16
"""How many of a session's finished streams stay resumable (the oldest is forgotten first)."""
KEPT_BYTES = 16 * 1024 * 1024
"""How many bytes of events a session's finished streams may hold together (the newest
finished stream is kept whatever its size)."""
MAX_STREAM_NOTES = 256
"""How many notifications one stream keeps (besides its answers and the server's requests)."""
MAX_STREAM_NOTE_BYTES = 1024 * 1024
"""How many bytes of notifications one stream keeps."""
PRIMING_SINCE = "2025-11-25"
"""The first protocol revision whose clients read a priming event (an id, no data)."""


@dataclass(frozen=True)
class Event:
    """One kept event: its number on the stream, its JSON (UTF-8) and what it carries."""

    seq: int
    data: bytes
    kept: bool
    """An answer or a server request: never dropped."""
    progress_token: Any = None


def _event(seq: int, message: JsonDict) -> Event:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    method = message.get("method")
    if not isinstance(method, str) or "id" in message:
        return Event(seq, data, kept=True)
    token = None
    if method == "notifications/progress":
        params = message.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
    return Event(seq, data, kept=False, progress_token=token)


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
        self.events: list[Event] = []
        """The events kept, in order of ``seq``."""
        self.sent = 0
        """The ``seq`` of the last event put on the stream (kept or not)."""
        self.note_bytes = 0
        self.answer_bytes = 0
        self._notes = 0
        self._progress: dict[Any, int] = {}
        self._open = 0
        self.connection = 0
        """How many connections were given the stream; only the newest writes it."""
        self._changed = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []
        for handler in handlers:
            self._open += 1
            self.tasks.append(asyncio.get_running_loop().create_task(self._answer(handler)))

    @classmethod
    def of(cls, reply: JsonDict) -> EventStream:
        """A stream holding one answer already known."""
        stream = cls([])
        stream._add(reply, final=False)
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
            self.sent += 1
            event = _event(self.sent, message)
            if event.kept:
                self.answer_bytes += len(event.data)
            else:
                if event.progress_token is not None:
                    self._progress[event.progress_token] = event.seq
                self._notes += 1
                self.note_bytes += len(event.data)
            self.events.append(event)
            if self._over():
                self._coalesce()
            while self._over():
                oldest = next(e for e in self.events if not e.kept)
                if self._progress.get(oldest.progress_token) == oldest.seq:
                    del self._progress[oldest.progress_token]
                self._drop(oldest)
        if final:
            self._open -= 1
        self._changed.set()

    def _over(self) -> bool:
        return self._notes > MAX_STREAM_NOTES or self.note_bytes > MAX_STREAM_NOTE_BYTES

    def _coalesce(self) -> None:
        """Forget every progress event a newer one of the same token replaced."""
        for event in [e for e in self.events if self._superseded(e)]:
            self._drop(event)

    def _superseded(self, event: Event) -> bool:
        token = event.progress_token
        return token is not None and self._progress.get(token, event.seq) > event.seq

    def _drop(self, event: Event) -> None:
        """Forget the notification ``event`` (replaced by a newer progress, or bounds)."""
        index = bisect.bisect_left(self.events, event.seq, key=lambda e: e.seq)
        del self.events[index]
        self._notes -= 1
        self.note_bytes -= len(event.data)

    @property
    def finished(self) -> bool:
        """Every request of the stream has its answer on it."""
        return self._open == 0

    @property
    def kept_bytes(self) -> int:
        """The bytes of JSON the stream holds."""
        return self.note_bytes + self.answer_bytes

    def event_id(self, seq: int) -> str | None:
        """The id of event ``seq`` (``0``: the priming event); None without a number."""
        return None if self.number is None else f"{self.number}/{seq}"

    def attach(self) -> int:
        """Give the stream to a new connection (a resumption): the one it had stops."""
        self.connection += 1
        self._changed.set()
        return self.connection

    async def event_after(self, seq: int, idle: float, connection: int = 0) -> Event | None:
        """The first kept event after ``seq`` once there is one; None after ``idle``
        seconds without one, or at once when the stream moved off ``connection``.

        Raises StopAsyncIteration when the stream finished with none after ``seq``."""
        while True:
            if connection and connection != self.connection:
                return None
            index = bisect.bisect_right(self.events, seq, key=lambda e: e.seq)
            if index < len(self.events):
                return self.events[index]
            if self.finished:
                raise StopAsyncIteration
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), idle)
            except TimeoutError:
                return None


@dataclass(frozen=True)
class Resumed:
    """A stream resumed by ``GET`` + ``Last-Event-ID``: its events after ``after``."""

    stream: EventStream
    after: int


class StreamForgotten(MCPError):
    """``Last-Event-ID`` names a stream of the session that is no longer kept."""


class SessionStreams:
    """One session's resumable streams, by number (see the module docstring)."""

    def __init__(self, protocol_version: str | None) -> None:
        self.priming = (protocol_version or "") >= PRIMING_SINCE
        self.streams: dict[int, EventStream] = {}
        self._next = 1

    def open(self, handlers: list[Any]) -> EventStream:
        """A new numbered stream answering ``handlers``."""
        self._forget_finished()
        stream = EventStream(handlers, self._next, priming=self.priming)
        self.streams[self._next] = stream
        self._next += 1
        return stream

    def _forget_finished(self) -> None:
        finished = [number for number, stream in self.streams.items() if stream.finished]
        total = sum(self.streams[number].kept_bytes for number in finished)
        for position, number in enumerate(finished[:-1]):  # oldest first; the newest stays
            if len(finished) - position <= KEPT_STREAMS and total <= KEPT_BYTES:
                break
            total -= self.streams.pop(number).kept_bytes

    @property
    def kept_bytes(self) -> int:
        """The bytes of JSON the session's streams hold."""
        return sum(stream.kept_bytes for stream in self.streams.values())

    def resume(self, last_event_id: str) -> Resumed:
        """Where ``Last-Event-ID`` resumes.

        Raises ValueError when the id is not ``<stream>/<n>`` or names a stream or an
        event never sent, :class:`StreamForgotten` when its stream is no longer kept."""
        number, sep, index = last_event_id.strip().partition("/")
        if not (sep and number.isdigit() and index.isdigit()):
            raise ValueError(
                f"Last-Event-ID {last_event_id!r} is not an event id of this server "
                "('<stream>/<n>', as its events carry)"
            )
        if int(number) >= self._next or int(number) == 0:
            raise ValueError(
                f"Last-Event-ID {last_event_id!r} names stream {number}, which this session "
                f"has not opened (it opened {self._next - 1})"
            )
        stream = self.streams.get(int(number))
        if stream is None:
            raise StreamForgotten(
                f"Last-Event-ID {last_event_id!r} names stream {number}, which this session no "
                f"longer keeps (it keeps its running streams and the last {KEPT_STREAMS} "
                "finished ones); its answer cannot be sent again"
            )
        if int(index) > stream.sent:
            raise ValueError(
                f"Last-Event-ID {last_event_id!r} names an event stream {number} has not sent "
                f"(it sent {stream.sent})"
            )
        return Resumed(stream, int(index))


async def write_stream(
    writer: asyncio.StreamWriter,
    headers: dict[str, str],
    stream: EventStream,
    keep_alive: float,
    *,
    after: int | None = None,
    write_seconds: float = WRITE_SECONDS,
) -> None:
    """Send ``stream``'s events as a chunked ``text/event-stream`` response, a comment
    when idle: a new stream from its priming event (if it has one), a resumed one
    from the first kept event after ``after``. Raises ConnectionError (the connection
    cut) when the client leaves an event unread for ``write_seconds``, or resumed the
    stream on another connection (an event is never sent on two)."""
    lines = [
        "HTTP/1.1 200 OK",
        "Content-Type: text/event-stream",
        "Cache-Control: no-cache",
        "Transfer-Encoding: chunked",
        "Connection: keep-alive",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    mine = stream.attach()
    if stream.priming and after is None:
        _chunk(writer, f"id: {stream.event_id(0)}\ndata:\n\n".encode())
    seq = after or 0
    while True:
        try:
            event = await stream.event_after(seq, keep_alive, mine)
        except StopAsyncIteration:
            break
        if mine != stream.connection:  # resumed elsewhere: never the same event on two
            writer.transport.abort()
            raise ConnectionError("the client resumed the stream on another connection")
        if event is None:
            _chunk(writer, b": keep-alive\n\n")
        else:
            event_id = stream.event_id(event.seq)
            head = f"id: {event_id}\n" if event_id is not None else ""
            _chunk(writer, f"{head}event: message\ndata: ".encode() + event.data + b"\n\n")
            seq = event.seq
        await drained(writer, write_seconds)  # a client that stops reading is cut off
    writer.write(b"0\r\n\r\n")


def _chunk(writer: asyncio.StreamWriter, event: bytes) -> None:
    writer.write(f"{len(event):x}\r\n".encode("ascii") + event + b"\r\n")


__all__ = [
    "KEPT_BYTES",
    "KEPT_STREAMS",
    "MAX_STREAM_NOTES",
    "MAX_STREAM_NOTE_BYTES",
    "PRIMING_SINCE",
    "Event",
    "EventStream",
    "Resumed",
    "SessionStreams",
    "StreamForgotten",
    "write_stream",
]
