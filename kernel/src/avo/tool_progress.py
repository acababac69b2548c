"""Progress a running tool reports, recorded in the run's log for whoever watches it.

A tool (an MCP server's ``notifications/progress``, a long build) calls
:func:`report_progress` while it runs; the runtime records a ``tool_progress``
event on the run (``tool_call_id``, ``name``, ``progress``, ``total``,
``message``), which ``avo runs inspect``, the web UI run page and any store
reader see while the call is still running. Progress is a note, not state:
nothing is decided from it and replay does not compare it.

A chatty tool cannot flood the log: per call, an update is recorded at once
only when the last recorded one is at least ``interval`` seconds old; an
update arriving sooner waits, replaced by any newer one, and is recorded
when the interval has passed or the call ends (so the latest word always
reaches the log); past ``limit`` recorded updates, only the last one is. The
seconds are the runtime's own (``runtime.timer``), so a runtime whose seams are
deterministic (a Temporal workflow's) records the same updates on a replay. For
a call running alone the events are written as they are recorded; for calls
running side by side (inspect-only tools) they go with the run's next write.

A sync tool, which the runtime runs in a worker thread, reports the same way:
its updates are handed to the run's event loop in the order they were made.

Outside a run's tool call (a tool invoked by hand), :func:`report_progress`
does nothing, unless someone listens with :func:`reporting_to` (``avo
serve-mcp`` relays a served tool's progress to the client that asked for
it). A tool that hands the work to another task captures the reporter first
with :func:`progress_reporter` (the MCP client does: the server's
notifications arrive on its reader task).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from avo.events import EventType

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.models import ToolCall
    from avo.runtime import AgentRuntime

T = TypeVar("T")

ProgressReporter = Callable[[float, float | None, str | None], None]
"""``reporter(progress, total, message)``: what :func:`progress_reporter` returns."""

DEFAULT_INTERVAL = 1.0
"""Seconds between two recorded updates of one call (sooner ones wait, newest wins)."""
DEFAULT_LIMIT = 100
"""Recorded updates per call before only the last one is."""
_MESSAGE_CHARS = 500

_REPORTER: ContextVar[ProgressReporter | None] = ContextVar("avo_tool_progress", default=None)


def progress_reporter() -> ProgressReporter | None:
    """The running tool call's reporter (None outside a run's tool call)."""
    return _REPORTER.get()


@contextlib.contextmanager
def reporting_to(reporter: ProgressReporter | None) -> Iterator[None]:
    """Within the block, :func:`report_progress` goes to ``reporter`` (an MCP server
    relaying a served tool's progress to its client; tests)."""
    token = _REPORTER.set(reporter)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def report_progress(
    progress: float, total: float | None = None, message: str | None = None
) -> None:
    """Record the running tool call's progress (``3`` of ``10``, with a short message)."""
    reporter = _REPORTER.get()
    if reporter is not None:
        reporter(progress, total, message)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # a worker thread
        return None


class _Recorder:
    """One tool call's progress: throttled appends to the run's log, written as they come."""

    __slots__ = (
        "_loop",
        "_timer",
        "_writer",
        "call",
        "closed",
        "ctx",
        "interval",
        "last_at",
        "limit",
        "live",
        "recorded",
        "rt",
        "waiting",
    )

    def __init__(
        self,
        rt: AgentRuntime,
        ctx: _RunContext,
        call: ToolCall,
        *,
        live: bool,
        interval: float | None = None,
        limit: int | None = None,
    ) -> None:
        self.rt, self.ctx, self.call, self.live = rt, ctx, call, live
        self.interval = DEFAULT_INTERVAL if interval is None else interval
        self.limit = DEFAULT_LIMIT if limit is None else limit
        self.recorded = 0
        self.last_at: float | None = None
        self.waiting: tuple[float, float | None, str | None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._writer: asyncio.Task[None] | None = None
        self.closed = False
        self._loop = asyncio.get_running_loop()

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self.closed or not isinstance(progress, int | float) or not math.isfinite(progress):
            return
        if _running_loop() is not self._loop:
            # A sync tool in its worker thread: the run's state belongs to the run's
            # loop, so the update is handed over (in order, ahead of the call's end).
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody to tell
                self._loop.call_soon_threadsafe(self, progress, total, message)
            return
        update = (progress, total, message)
        now = self.rt.timer()
        last = self.last_at
        if (last is None or now - last >= self.interval) and self.recorded < self.limit:
            self.waiting = None
            self._record(update, now)
            return
        self.waiting = update  # newest wins; recorded when due or when the call ends
        if self._timer is None and self.recorded < self.limit and last is not None:
            with contextlib.suppress(RuntimeError):
                delay = max(0.0, last + self.interval - now)
                self._timer = asyncio.get_running_loop().call_later(delay, self._due)

    def _due(self) -> None:
        self._timer = None
        if self.waiting is not None and not self.closed:
            update, self.waiting = self.waiting, None
            self._record(update, self.rt.timer())

    def _record(self, update: tuple[float, float | None, str | None], now: float) -> None:
        from avo.runtime_persistence import append

        progress, total, message = update
        payload: dict[str, Any] = {
            "tool_call_id": self.call.tool_call_id,
            "name": self.call.name,
            "progress": float(progress),
            "total": float(total) if isinstance(total, int | float) else None,
            "message": message[:_MESSAGE_CHARS] if isinstance(message, str) else None,
        }
        append(self.rt, self.ctx, EventType.TOOL_PROGRESS, payload)
        self.recorded += 1
        self.last_at = now
        if self.live and (self._writer is None or self._writer.done()):
            with contextlib.suppress(RuntimeError):
                self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        from avo.runtime_persistence import flush

        while self.ctx.pending:  # updates recorded during a write go in the next one
            await flush(self.rt, self.ctx)

    async def close(self) -> None:
        """The call ended: record the update still waiting, and finish writing."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.waiting is not None:
            update, self.waiting = self.waiting, None
            self._record(update, self.rt.timer())
        self.closed = True
        if self._writer is not None:  # the run's own next write must not overlap it
            await asyncio.shield(self._writer)


async def recording_progress(
    rt: AgentRuntime, ctx: _RunContext, call: ToolCall, invocation: Awaitable[T], *, live: bool
) -> T:
    """Await ``invocation`` (a tool call) with :func:`report_progress` recording for ``call``.

    ``live``: the call runs alone, so its progress is written as it comes (the
    runtime writes nothing else meanwhile); else it goes with the run's next write.
    """
    recorder = _Recorder(rt, ctx, call, live=live)
    token = _REPORTER.set(recorder)
    try:
        return await invocation
    finally:
        _REPORTER.reset(token)
        if recorder.last_at is None and recorder.waiting is None:
            recorder.closed = True  # nothing reported (most calls): nothing to finish
        else:
            await recorder.close()


__all__ = [
    "DEFAULT_INTERVAL",
    "DEFAULT_LIMIT",
    "ProgressReporter",
    "progress_reporter",
    "recording_progress",
    "report_progress",
    "reporting_to",
]
