"""A tool's progress under Temporal: reported on the worker, recorded by the workflow.

In process, a tool's :func:`avo.tool_progress.report_progress` reaches the
runtime's recorder, which appends ``tool_progress`` events to the run's log.
Under Temporal the tool runs in the ``avo.tool`` activity, away from the run,
and only the workflow numbers and writes the run's events. So the activity
listens to the tool (:class:`ProgressRelay`, installed with
:func:`avo.tool_progress.reporting_to`) and sends each update to the run's
workflow as a ``progress`` signal; the workflow hands it to the kernel's own
recorder for the call, which appends the event with the same payload as in
process (its ids, clock and throttle are the workflow's, so a replay records
the same), and the workflow's store proxy writes it at once while the call is
still running (:meth:`avo_temporal.proxies.ActivityStore.append_batch`).

The relay throttles as the recorder does (an update at most every
``DEFAULT_INTERVAL`` seconds, sooner ones wait and the newest wins, at most
``DEFAULT_LIMIT`` per call), so a chatty tool costs a signal a second, not one
per update; a tool that reports nothing costs nothing. The signals go to the
workflow execution that started the activity, in order, and all are sent
before the activity returns, so the last word precedes the call's result. A
signal that cannot be sent (the workflow is gone, or the server does not answer
within ``CLOSE_SECONDS`` of the call's end) is dropped: progress is a note,
never state, and the tool's effect does not depend on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from temporalio import activity

from avo.tool_progress import DEFAULT_INTERVAL, DEFAULT_LIMIT, reporting_to

SIGNAL = "progress"
"""The workflow signal that carries one update of a running call."""

_MESSAGE_CHARS = 500
"""What the kernel keeps of a message; no more travels."""

CLOSE_SECONDS = 10.0
"""How long a call's end waits for its last signals (a server that stopped answering)."""


class ProgressRelay:
    """One call's reporter on the worker: throttled updates, sent in order as signals."""

    def __init__(
        self,
        handle: Any,
        call_id: str,
        dispatch: int,
        *,
        interval: float | None = None,
        limit: int | None = None,
    ) -> None:
        self.handle, self.call_id, self.dispatch = handle, call_id, dispatch
        self.interval = DEFAULT_INTERVAL if interval is None else interval
        self.limit = DEFAULT_LIMIT if limit is None else limit
        self.sent = 0
        self.last_at: float | None = None
        self.waiting: tuple[float, float | None, str | None] | None = None
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._timer: asyncio.TimerHandle | None = None
        self._queue: deque[dict[str, Any]] = deque()
        self._sender: asyncio.Task[None] | None = None
        self.closed = False

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        """The tool's report (from the worker's loop, or a tool's own thread)."""
        if threading.get_ident() != self._thread:
            self._loop.call_soon_threadsafe(self._take, progress, total, message)
        else:
            self._take(progress, total, message)

    def _take(self, progress: float, total: float | None, message: str | None) -> None:
        if self.closed or not isinstance(progress, int | float) or not math.isfinite(progress):
            return
        update = (float(progress), total, message)
        now = time.monotonic()
        last = self.last_at
        if (last is None or now - last >= self.interval) and self.sent < self.limit:
            self.waiting = None
            self._send(update, now)
            return
        self.waiting = update  # newest wins; sent when due or when the call ends
        if self._timer is None and self.sent < self.limit and last is not None:
            delay = max(0.0, last + self.interval - now)
            self._timer = self._loop.call_later(delay, self._due)

    def _due(self) -> None:
        self._timer = None
        if self.waiting is not None and not self.closed:
            update, self.waiting = self.waiting, None
            self._send(update, time.monotonic())

    def _send(self, update: tuple[float, float | None, str | None], now: float) -> None:
        progress, total, message = update
        self._queue.append(
            {
                "tool_call_id": self.call_id,
                "dispatch": self.dispatch,
                "progress": progress,
                "total": float(total) if isinstance(total, int | float) else None,
                "message": message[:_MESSAGE_CHARS] if isinstance(message, str) else None,
            }
        )
        self.sent += 1
        self.last_at = now
        if self._sender is None or self._sender.done():
            self._sender = self._loop.create_task(self._drain())

    async def _drain(self) -> None:
        while self._queue:
            payload = self._queue.popleft()
            try:
                await self.handle.signal(SIGNAL, payload)
            except Exception as exc:  # the workflow is gone, or the server unreachable
                activity.logger.info("progress of %s not sent: %s", self.call_id, exc)

    async def close(self) -> None:
        """The call ended: send the update still waiting; return once every signal went."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.waiting is not None and not self.closed:
            update, self.waiting = self.waiting, None
            self._send(update, time.monotonic())
        self.closed = True
        if self._sender is not None and not self._sender.done():
            try:  # the result must not wait for a note: what is not sent by then is dropped
                await asyncio.wait_for(asyncio.shield(self._sender), CLOSE_SECONDS)
            except TimeoutError:
                self._sender.cancel()
                activity.logger.info("progress of %s not sent in time", self.call_id)


@contextlib.asynccontextmanager
async def relaying_progress(call_id: str, dispatch: int) -> AsyncIterator[None]:
    """Within the block (the activity's tool call), the tool's progress goes to its workflow."""
    info = activity.info()
    try:
        client = activity.client()
    except RuntimeError:  # an activity run without a worker's client (a test harness)
        yield
        return
    handle = client.get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
    relay = ProgressRelay(handle, call_id, dispatch)
    try:
        with reporting_to(relay):
            yield
    finally:
        if relay.last_at is None and relay.waiting is None:
            relay.closed = True  # nothing reported (most calls): nothing to send
        else:
            await relay.close()


__all__ = ["CLOSE_SECONDS", "SIGNAL", "ProgressRelay", "relaying_progress"]
