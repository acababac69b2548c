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

The relay throttles with the recorder's own mechanism
(:class:`avo.tool_progress.ProgressThrottle`: an update at most every second,
sooner ones wait and the newest wins, at most 100 per call), so a chatty tool
costs a signal a second, not one per update; a tool that reports nothing costs
nothing. The signals go to the workflow execution that started the activity, in
order, and all are sent before the activity returns, so the last word precedes
the call's result. A signal that cannot be sent (the workflow is gone, or the
server does not answer within ``CLOSE_SECONDS`` of the call's end) is dropped:
progress is a note, never state, and the tool's effect does not depend on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from temporalio import activity

from avo.tool_progress import MESSAGE_CHARS, ProgressThrottle, Update, reporting_to

SIGNAL = "progress"
"""The workflow signal that carries one update of a running call."""

CLOSE_SECONDS = 10.0
"""How long a call's end waits for its last signals (a server that stopped answering)."""


class ProgressRelay(ProgressThrottle):
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
        super().__init__(time.monotonic, interval=interval, limit=limit)
        self.handle, self.call_id, self.dispatch = handle, call_id, dispatch
        self._queue: deque[dict[str, Any]] = deque()
        self._sender: asyncio.Task[None] | None = None

    def emit(self, update: Update) -> None:
        progress, total, message = update
        self._queue.append(
            {
                "tool_call_id": self.call_id,
                "dispatch": self.dispatch,
                "progress": progress,
                "total": float(total) if isinstance(total, int | float) else None,
                "message": message[:MESSAGE_CHARS] if isinstance(message, str) else None,
            }
        )
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
        self.finish()
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
        if relay.reported:
            await relay.close()
        else:
            relay.closed = True  # nothing reported (most calls): nothing to send


__all__ = ["CLOSE_SECONDS", "SIGNAL", "ProgressRelay", "relaying_progress"]
