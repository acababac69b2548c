"""The sessions ``avo serve-mcp --http`` keeps, and when it lets one go.

A session lives from ``initialize`` until the client ends it (``DELETE``),
until it has been idle for ``idle_seconds`` (no request, no response being
written, no request of it running), or until room is needed for a new one:
the table holds at most ``max_sessions``, and a new session pushes out the
one idle the longest. A request naming a session that ended is answered
``404``, which tells an MCP client to initialize again. When every session
is busy a new one is refused (``503``) rather than one in use cut off.
Ending a session cancels its running requests. A session runs at most
``max_requests`` requests at once; a POST that would pass it is ``429``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from avo_mcp.http_stream import SessionStreams
from avo_mcp.server import AvoMcpServer

MAX_SESSIONS = 256
"""How many sessions one server keeps at most."""
SESSION_IDLE_SECONDS = 3600.0
"""How long a session may stay idle before it ends."""
MAX_REQUESTS = 64
"""How many requests of one session may run at once (past that ``429``)."""


class SessionTable:
    """The live sessions of one HTTP server, by ``Mcp-Session-Id``."""

    def __init__(
        self,
        *,
        max_sessions: int = MAX_SESSIONS,
        idle_seconds: float = SESSION_IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        max_requests: int = MAX_REQUESTS,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions!r}")
        if idle_seconds <= 0:
            raise ValueError(f"session idle time must be > 0 seconds, got {idle_seconds!r}")
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.clock = clock
        self.max_requests = max_requests
        self.running: Counter[str] = Counter()
        """How many requests of each session run now."""
        self.servers: dict[str, AvoMcpServer] = {}
        self.streams: dict[str, SessionStreams] = {}
        """Each session's resumable event streams (``avo_mcp.http_stream``)."""
        self._used: dict[str, float] = {}
        self._writing: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.servers)

    def get(self, session_id: str) -> AvoMcpServer | None:
        """The session's server (None: unknown or ended); marks it used now."""
        self.expire()
        server = self.servers.get(session_id)
        if server is not None:
            self._used[session_id] = self.clock()
        return server

    def has_room(self) -> bool:
        """Whether a new session fits, after ending expired ones and, at the cap, the
        session idle the longest."""
        self.expire()
        if len(self.servers) < self.max_sessions:
            return True
        idle = [sid for sid in self.servers if not self.busy(sid)]
        if not idle:
            return False
        self.end(min(idle, key=self._used.__getitem__))
        return True

    def add(self, session_id: str, server: AvoMcpServer) -> None:
        """Keep a session that just initialized."""
        self.servers[session_id] = server
        self.streams[session_id] = SessionStreams(server.protocol_version)
        self._used[session_id] = self.clock()

    def accept(self, session_id: str, requests: int) -> bool:
        """Count ``requests`` more running for the session; False (nothing counted) when
        that would pass ``max_requests``."""
        if self.running[session_id] + requests > self.max_requests:
            return False
        self.running[session_id] += requests
        return True

    def finished(self, session_id: str) -> None:
        """One request of the session finished (it is used now)."""
        self.running[session_id] -= 1
        if self.running[session_id] <= 0:
            del self.running[session_id]
        self.touch(session_id)

    def busy(self, session_id: str) -> bool:
        """A request of the session runs, or a response to it is being written."""
        server = self.servers.get(session_id)
        streams = self.streams.get(session_id)
        return bool(
            (server is not None and server._in_flight)
            or self.running[session_id]
            or self._writing[session_id]
            or (streams is not None and any(not s.finished for s in streams.streams.values()))
        )

    def expire(self) -> None:
        """End every session idle for longer than ``idle_seconds``."""
        now = self.clock()
        stale = [sid for sid, used in self._used.items() if used < now - self.idle_seconds]
        for session_id in stale:
            if self.busy(session_id):
                self._used[session_id] = now  # idle from when it is seen busy last
            else:
                self.end(session_id)

    def touch(self, session_id: str) -> None:
        """The session was used now (a request of it just finished)."""
        if session_id in self._used:
            self._used[session_id] = self.clock()

    def end(self, session_id: str) -> bool:
        """End the session (its running requests are cancelled); False if unknown."""
        self.streams.pop(session_id, None)
        self._used.pop(session_id, None)
        server = self.servers.pop(session_id, None)
        if server is None:
            return False
        for task in list(server._in_flight.values()):
            task.cancel()
        return True

    def clear(self) -> None:
        """End every session."""
        for session_id in list(self.servers):
            self.end(session_id)

    @contextmanager
    def writing(self, session_id: str | None) -> Iterator[None]:
        """While a response of the session is written it is not idle (it is used after)."""
        if not session_id:
            yield
            return
        self._writing[session_id] += 1
        try:
            yield
        finally:
            self._writing[session_id] -= 1
            if not self._writing[session_id]:
                del self._writing[session_id]
            if session_id in self._used:
                self._used[session_id] = self.clock()


__all__ = ["MAX_REQUESTS", "MAX_SESSIONS", "SESSION_IDLE_SECONDS", "SessionTable"]
