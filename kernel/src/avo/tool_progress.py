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
MESSAGE_CHARS = 500
"""What is kept of a report's message."""

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


Update = tuple[float, float | None, str | None]
"""``(progress, total, message)`` of one report."""


class ProgressThrottle:
    """One call's reports, thinned: what :class:`_Recorder` records and an engine relays.

    The first report is passed on at once; later ones at most every
    ``interval`` seconds of ``clock`` (a sooner one waits, replaced by any newer
    one, and goes when due or at :meth:`finish`); past ``limit`` passed-on
    reports only the last one is. A report made off the loop the throttle was
    made on (a sync tool's worker thread) is handed to that loop first, in
    order. A subclass says what passing one on means (:meth:`emit`).
    """

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        interval: float | None = None,
        limit: int | None = None,
    ) -> None:
        self.clock = clock
        self.interval = DEFAULT_INTERVAL if interval is None else interval
        self.limit = DEFAULT_LIMIT if limit is None else limit
        self.count = 0
        self.last_at: float | None = None
        self.waiting: Update | None = None
        self.closed = False
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def reported(self) -> bool:
        """True once the call reported anything (most calls never do)."""
        return self.last_at is not None or self.waiting is not None

    def emit(self, update: Update) -> None:
        """Pass one report on (a subclass records or sends it)."""
        raise NotImplementedError

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self.closed or not isinstance(progress, int | float) or not math.isfinite(progress):
            return
        if _running_loop() is not self._loop:
            # A sync tool in its worker thread: the state belongs to the loop, so the
            # report is handed over (in order, ahead of the call's end).
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody to tell
                self._loop.call_soon_threadsafe(self, progress, total, message)
            return
        update = (float(progress), total, message)
        now = self.clock()
        last = self.last_at
        if (last is None or now - last >= self.interval) and self.count < self.limit:
            self.waiting = None
            self._pass(update, now)
            return
        self.waiting = update  # newest wins; passed on when due or when the call ends
        if self._timer is None and self.count < self.limit and last is not None:
            delay = max(0.0, last + self.interval - now)
            self._timer = self._loop.call_later(delay, self._due)

    def _due(self) -> None:
        self._timer = None
        if self.waiting is not None and not self.closed:
            update, self.waiting = self.waiting, None
            self._pass(update, self.clock())

    def _pass(self, update: Update, now: float) -> None:
        self.emit(update)
        self.count += 1
        self.last_at = now

    def finish(self) -> None:
        """The call ended: pass on the report still waiting; take no more."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.waiting is not None and not self.closed:
            update, self.waiting = self.waiting, None
            self._pass(update, self.clock())
        self.closed = True


class _Recorder(ProgressThrottle):
    """One tool call's progress: throttled appends to the run's log, written as they come.

    The seconds are the runtime's own (``rt.timer``), so a workflow's replay
    records the same updates.
    """

    def __init__(self, rt: AgentRuntime, ctx: _RunContext, call: ToolCall, *, live: bool) -> None:
        super().__init__(rt.timer)
        self.rt, self.ctx, self.call, self.live = rt, ctx, call, live
        self._writer: asyncio.Task[None] | None = None

    def emit(self, update: Update) -> None:
        from avo.runtime_persistence import append

        progress, total, message = update
        payload: dict[str, Any] = {
            "tool_call_id": self.call.tool_call_id,
            "name": self.call.name,
            "progress": progress,
            "total": float(total) if isinstance(total, int | float) else None,
            "message": message[:MESSAGE_CHARS] if isinstance(message, str) else None,
        }
        append(self.rt, self.ctx, EventType.TOOL_PROGRESS, payload)
        if self.live and (self._writer is None or self._writer.done()):
            self._writer = self._loop.create_task(self._write())

    async def _write(self) -> None:
        from avo.runtime_persistence import flush

        while self.ctx.pending:  # updates recorded during a write go in the next one
            await flush(self.rt, self.ctx)

    async def close(self) -> None:
        """The call ended: record the update still waiting, and finish writing."""
        self.finish()
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
        if recorder.reported:
            await recorder.close()
        else:
            recorder.closed = True  # nothing reported (most calls): nothing to finish


__all__ = [
    "DEFAULT_INTERVAL",
    "DEFAULT_LIMIT",
    "MESSAGE_CHARS",
    "ProgressReporter",
    "ProgressThrottle",
    "Update",
    "progress_reporter",
    "recording_progress",
    "report_progress",
    "reporting_to",
]
