"""``avo serve-mcp --http``: avo's tools over the MCP streamable HTTP transport.

A small HTTP/1.1 server on asyncio streams (no web framework: ``avo
serve-mcp`` stays quick to start). One endpoint, ``/mcp``:

- ``POST`` carries JSON-RPC messages; notifications and responses get
  ``202``. Requests are answered with one JSON body (``application/json``),
  except a ``tools/call`` from a client that accepts ``text/event-stream``:
  that answer is an event stream (SSE) carrying the tool's progress
  notifications (when the request has a ``progressToken``), a keep-alive
  comment every 15 seconds while the tool runs, then the answer, and it
  ends. Its events carry ids, and a client whose connection dropped resumes
  it (``avo_mcp.http_stream``). A client that accepts only ``text/event-stream`` gets every answer
  as a stream; ``json_response=True`` (``--json-response``) answers JSON only.
  ``initialize`` opens a session (``Mcp-Session-Id``); every later message
  must carry it (``400`` without, ``404`` for an unknown or ended one).
- ``GET`` with ``Last-Event-ID`` resumes the stream that event was on (the
  events after it, then the rest live); ``405`` when the session no longer
  keeps that stream. Without it ``GET`` is ``405``: this server never sends
  requests of its own, so it offers no standalone stream.
- ``DELETE`` ends the session.

DNS-rebinding protection: the ``Host`` header must name the loopback
interface (``localhost``, ``127.0.0.1``, ``[::1]``) or a host given with
``allowed_hosts``, and an ``Origin`` header, when sent, must be an
``http(s)`` origin on one of those hosts, else ``403``. It binds to
``127.0.0.1`` unless told otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from avo_mcp.framing import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    INVALID_REQUEST,
    PARSE_ERROR,
    JsonDict,
    error_response,
)
from avo_mcp.http_sessions import MAX_REQUESTS, MAX_SESSIONS, SESSION_IDLE_SECONDS, SessionTable
from avo_mcp.http_stream import EventStream, Resumed, StreamForgotten, write_stream
from avo_mcp.http_wire import (
    IDLE_SECONDS,
    MAX_LINE,
    REQUEST_SECONDS,
    WRITE_SECONDS,
    HttpError,
    drained,
    read_request,
    write_response,
)
from avo_mcp.notify import notifying
from avo_mcp.server import AvoMcpServer

MAX_CONNECTIONS = 512
"""How many connections the server holds open at once."""
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
KEEP_ALIVE_SECONDS = 15.0
"""How long an event stream may stay silent before a keep-alive comment."""


def host_of(value: str) -> str:
    """The host name of a ``Host`` header or an origin (port and brackets removed)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class McpHttpServer:
    """Serve MCP sessions over HTTP; each session gets its own :class:`AvoMcpServer`."""

    def __init__(
        self,
        make_session: Callable[[], AvoMcpServer],
        *,
        path: str = "/mcp",
        allowed_hosts: Iterable[str] = (),
        json_response: bool = False,
        keep_alive_seconds: float = KEEP_ALIVE_SECONDS,
        max_sessions: int = MAX_SESSIONS,
        max_requests: int = MAX_REQUESTS,
        session_idle_seconds: float = SESSION_IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        max_connections: int = MAX_CONNECTIONS,
        idle_seconds: float = IDLE_SECONDS,
        request_seconds: float = REQUEST_SECONDS,
        write_seconds: float = WRITE_SECONDS,
    ) -> None:
        self.make_session = make_session
        self.path = path
        self.json_response = json_response
        self.keep_alive_seconds = keep_alive_seconds
        self.max_connections = max_connections
        self.idle_seconds = idle_seconds
        self.request_seconds = request_seconds
        self.write_seconds = write_seconds
        self._writers: set[asyncio.StreamWriter] = set()
        self.allowed_hosts = LOOPBACK_HOSTS | {host_of(h) for h in allowed_hosts}
        self.table = SessionTable(
            max_sessions=max_sessions,
            idle_seconds=session_idle_seconds,
            clock=clock,
            max_requests=max_requests,
        )
        """The live sessions (``avo_mcp.http_sessions``: idle ones end, their number is capped)."""
        self.sessions = self.table.servers
        self.streams = self.table.streams
        """Each session's resumable event streams (``avo_mcp.http_stream``)."""
        self._server: asyncio.Server | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        """Listen; return the bound (host, port)."""
        self.allowed_hosts = self.allowed_hosts | {host_of(host)}
        self._server = await asyncio.start_server(self._connection, host, port, limit=MAX_LINE)
        sockname = self._server.sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    async def serve_forever(self) -> None:
        """Serve until cancelled."""
        assert self._server is not None, "call start() first"
        async with self._server:
            await self._server.serve_forever()

    @property
    def connections(self) -> int:
        """Connections open now (at most ``max_connections``; past that ``503``)."""
        return len(self._writers)

    async def close(self) -> None:
        """Stop listening, end every session (cancelling its requests) and close every
        connection (also one idle or reading a stream)."""
        if self._server is not None:
            self._server.close()
        self.table.clear()
        for writer in list(self._writers):
            writer.transport.abort()
        if self._server is not None:
            await self._server.wait_closed()

    # ------------------------------------------------------------- HTTP layer

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            if self.connections > self.max_connections:
                refusal = f"this server already has {self.max_connections} connections open"
                raise HttpError(503, refusal, {"Retry-After": "5"})
            while True:
                request = await read_request(
                    reader, idle_seconds=self.idle_seconds, request_seconds=self.request_seconds
                )
                if request is None:
                    break
                if not await self._answer(writer, *request):
                    break
        except HttpError as exc:  # the request could not be read: answer, then close
            payload = error_response(None, INVALID_REQUEST, str(exc))
            with contextlib.suppress(ConnectionError):
                write_response(writer, exc.status, exc.headers, payload, keep_alive=False)
                await drained(writer, self.write_seconds)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()

    async def _answer(
        self,
        writer: asyncio.StreamWriter,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
    ) -> bool:
        """Answer one request; False when the connection is to close after it."""
        try:
            status, extra, payload = await self._respond(method, target, headers, body)
        except HttpError as exc:
            status, extra = exc.status, exc.headers
            payload = error_response(None, INVALID_REQUEST, str(exc))
        keep = headers.get("connection", "").lower() != "close"
        with self.table.writing(headers.get("mcp-session-id")):
            if isinstance(payload, EventStream | Resumed):
                stream = payload if isinstance(payload, EventStream) else payload.stream
                after = payload.after if isinstance(payload, Resumed) else None
                await write_stream(
                    writer, extra, stream, self.keep_alive_seconds,
                    after=after, write_seconds=self.write_seconds,
                )  # fmt: skip
            else:
                write_response(writer, status, extra, payload, keep_alive=keep)
            await drained(writer, self.write_seconds)
        return keep

    async def _respond(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        self._check_origin(headers)
        if urlsplit(target).path != self.path:
            raise HttpError(404, f"no MCP endpoint at {urlsplit(target).path}; use {self.path}")
        if method == "GET":
            last_event_id = headers.get("last-event-id")
            if last_event_id is None:  # no standalone stream: this server sends no requests
                return 405, {"Allow": "POST, DELETE"}, None
            return 200, {}, self._resume(headers, last_event_id)
        if method == "DELETE":
            session_id = headers.get("mcp-session-id", "")
            if not self.table.end(session_id):
                raise HttpError(404, "unknown or ended MCP session")
            return 200, {}, None
        if method != "POST":
            return 405, {"Allow": "POST, GET, DELETE"}, None
        return await self._post(headers, body)

    def _check_origin(self, headers: dict[str, str]) -> None:
        host = headers.get("host")
        if host is None or host_of(host) not in self.allowed_hosts:
            raise HttpError(403, f"Host {host!r} is not allowed (DNS-rebinding protection)")
        origin = headers.get("origin")
        if origin is not None and origin != "null":
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or (
                host_of(parts.hostname or "") not in self.allowed_hosts
            ):
                raise HttpError(403, f"Origin {origin!r} is not allowed (DNS-rebinding protection)")
        elif origin == "null":
            raise HttpError(403, "Origin 'null' is not allowed (DNS-rebinding protection)")

    def _resume(self, headers: dict[str, str], last_event_id: str) -> Resumed:
        """``GET`` + ``Last-Event-ID``: the rest of the stream that id is on."""
        if "text/event-stream" not in headers.get("accept", "").lower():
            raise HttpError(406, "resuming a stream answers text/event-stream; accept it")
        session_id = headers.get("mcp-session-id")
        if not session_id:
            raise HttpError(400, "send the Mcp-Session-Id header of the stream's session")
        streams = self.streams.get(session_id)
        if streams is None or self.table.get(session_id) is None:
            raise HttpError(404, "unknown or ended MCP session; initialize again")
        try:
            return streams.resume(last_event_id)
        except ValueError as exc:
            raise HttpError(400, str(exc)) from None
        except StreamForgotten as exc:  # (not 404: that would end the client's session)
            raise HttpError(405, str(exc), {"Allow": "POST, DELETE"}) from None

    # -------------------------------------------------------------- MCP layer

    async def _post(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], Any]:
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise HttpError(415, "POST a JSON-RPC message with Content-Type: application/json")
        accept = headers.get("accept", "*/*").lower()
        takes_json = any(kind in accept for kind in ("application/json", "*/*", "application/*"))
        takes_stream = "text/event-stream" in accept and not self.json_response
        if not takes_json and not takes_stream:
            raise HttpError(
                406, "this server answers with application/json or text/event-stream; accept one"
            )
        try:
            payload = json.loads(body)
        except ValueError:
            return 400, {}, error_response(None, PARSE_ERROR, "the body is not JSON")
        batch = isinstance(payload, list)
        messages = payload if batch else [payload]
        if not messages or not all(isinstance(m, dict) for m in messages):
            return 400, {}, error_response(None, INVALID_REQUEST, "expected JSON-RPC messages")
        extra: dict[str, str] = {}
        if any(m.get("method") == "initialize" for m in messages):
            if len(messages) != 1:
                raise HttpError(400, "initialize must be sent on its own")
            if not self.table.has_room():
                raise HttpError(
                    503,
                    f"this server already serves {self.table.max_sessions} sessions, all busy; "
                    "try again later",
                    {"Retry-After": "5"},
                )
            session_id = secrets.token_hex(16)
            session = self.make_session()
            reply = await session.handle(messages[0])
            if reply is not None and "result" in reply:
                self.table.add(session_id, session)
                extra["Mcp-Session-Id"] = session_id
            if not takes_json and reply is not None:
                return 200, extra, EventStream.of(reply)
            return 200, extra, reply
        session_id = headers.get("mcp-session-id")
        if not session_id:
            raise HttpError(400, "send the Mcp-Session-Id header from initialize")
        session = self.table.get(session_id)
        if session is None:
            raise HttpError(404, "unknown or ended MCP session; initialize again")
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise HttpError(400, f"unsupported MCP-Protocol-Version {version!r}")
        requests = [m for m in messages if _is_request(m)]
        if not self.table.accept(session_id, len(requests)):
            raise HttpError(
                429,
                f"this session already runs {self.table.running[session_id]} requests (at most "
                f"{self.table.max_requests} at once); wait for their answers",
                {"Retry-After": "1"},
            )
        if (
            takes_stream
            and requests
            and (not takes_json or any(m.get("method") == "tools/call" for m in requests))
        ):
            for message in messages:
                if not _is_request(message):
                    await session.handle(message)
            handlers = [partial(self._streamed, session_id, session, m) for m in requests]
            return 200, {}, self.streams[session_id].open(handlers)
        replies = [
            r
            for r in await asyncio.gather(*(self._one(session_id, session, m) for m in messages))
            if r
        ]
        if not replies:
            return 202, {}, None
        return 200, {}, replies if batch else replies[0]

    async def _streamed(
        self, session_id: str, session: AvoMcpServer, message: JsonDict, stream: EventStream
    ) -> JsonDict | None:
        """Answer one request of an event stream: its notifications go on the stream first."""
        notifying(stream.send)  # (this task's own context; _one's task copies it)
        return await self._one(session_id, session, message)

    async def _one(
        self, session_id: str, session: AvoMcpServer, message: JsonDict
    ) -> JsonDict | None:
        """Handle one message (a request counted by ``table.accept`` counts as finished after)."""
        try:
            return await self._handle(session, message)
        finally:
            if _is_request(message):
                self.table.finished(session_id)

    async def _handle(self, session: AvoMcpServer, message: JsonDict) -> JsonDict | None:
        """Handle one message; a request runs as a task ``notifications/cancelled`` can end."""
        request_id = message.get("id")
        if request_id is None or not isinstance(message.get("method"), str):
            return await session.handle(message)
        task = asyncio.get_running_loop().create_task(session.handle(message))
        session._in_flight[request_id] = task
        try:
            return await task
        except asyncio.CancelledError:
            if task.cancelled() and not _current_cancelled():
                return error_response(request_id, -32800, "request cancelled by the client")
            raise
        finally:
            session._in_flight.pop(request_id, None)


def _is_request(message: JsonDict) -> bool:
    return "id" in message and isinstance(message.get("method"), str)


def _current_cancelled() -> bool:
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0


__all__ = ["KEEP_ALIVE_SECONDS", "LOOPBACK_HOSTS", "EventStream", "McpHttpServer", "host_of"]
