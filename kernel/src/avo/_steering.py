"""Per-run message queues for steering a working run (internal; see :mod:`avo.ops.steer`).

A front end posts a message for a run this process is driving; the run adds it
to its transcript (as a user message) right before its next model call and
records a ``run_steered`` event. Runs register while they are driven, so a
message for a run that is not working here is refused at once instead of
waiting forever.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from avo.events import EventType
from avo.exceptions import SteeringError
from avo.models import new_id, utc_now

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.runtime import AgentRuntime

MAX_MESSAGE_CHARS = 100_000


@dataclass
class SteerMessage:
    """A message posted for a run; ``delivered_step`` is set when it joins the transcript."""

    message_id: str
    run_id: str
    text: str
    source: str
    posted_at: datetime
    delivered_step: int | None = None

    @property
    def delivered(self) -> bool:
        """True once the run added the message to its transcript."""
        return self.delivered_step is not None


_lock = threading.Lock()
_active: dict[str, SteeringQueue] = {}
"""Runs being driven in this process, by run id -> the queue of their runtime."""


class SteeringQueue:
    """The queued messages of one runtime's runs (``queued`` is empty most of the time)."""

    def __init__(self) -> None:
        self.queued: dict[str, list[SteerMessage]] = {}

    # -- the runtime's side ---------------------------------------------------

    def start(self, run_id: str) -> None:
        """The runtime began driving ``run_id``: accept messages for it."""
        with _lock:
            _active[run_id] = self

    def stop(self, run_id: str) -> list[SteerMessage]:
        """The run stopped being driven; returns messages it never received."""
        with _lock:
            if _active.get(run_id) is self:
                del _active[run_id]
            return self.queued.pop(run_id, [])

    def deliver(self, rt: AgentRuntime, ctx: _RunContext) -> None:
        """Add the run's queued messages to its transcript, one event each."""
        from avo.runtime_persistence import append

        with _lock:
            items = self.queued.pop(ctx.run_id, None)
        for item in items or ():
            ctx.messages.append({"role": "user", "content": item.text})
            append(
                rt,
                ctx,
                EventType.RUN_STEERED,
                {
                    "message_id": item.message_id,
                    "message": item.text,
                    "source": item.source,
                    "posted_at": item.posted_at.isoformat(),
                    "step": ctx.next_step,
                },
            )
            item.delivered_step = ctx.next_step

    # -- the front end's side -------------------------------------------------

    def post(self, run_id: str, text: str, *, source: str, on_resume: bool = False) -> SteerMessage:
        """Queue ``text`` for ``run_id`` (SteeringError if it is not driven by this queue).

        ``on_resume``: the run is not driven yet; this queue's runtime is about to
        resume it (refused only when another runtime drives it now).
        """
        item = _message(run_id, text, source)
        with _lock:
            driver = _active.get(run_id)
            if driver is not self and not (on_resume and driver is None):
                raise SteeringError(_not_running(run_id), run_id=run_id)
            self.queued.setdefault(run_id, []).append(item)
        return item


def _message(run_id: str, text: str, source: str) -> SteerMessage:
    if not isinstance(text, str) or not text.strip():
        raise SteeringError(
            f"a steering message for run {run_id!r} must be non-empty text", run_id=run_id
        )
    if len(text) > MAX_MESSAGE_CHARS:
        raise SteeringError(
            f"the steering message for run {run_id!r} has {len(text)} characters; "
            f"the limit is {MAX_MESSAGE_CHARS}: shorten it or attach a file the agent can read",
            run_id=run_id,
        )
    return SteerMessage(
        message_id=new_id(), run_id=run_id, text=text, source=source, posted_at=utc_now()
    )


def _not_running(run_id: str) -> str:
    return (
        f"run {run_id!r} is not working in this process, so it cannot be steered; "
        "steer a run while it runs (a finished run is continued with a session instead)"
    )


def post(run_id: str, text: str, *, source: str = "api") -> SteerMessage:
    """Queue ``text`` for whichever runtime in this process is driving ``run_id``."""
    with _lock:
        queue = _active.get(run_id)
    if queue is None:
        _message(run_id, text, source)  # bad text is reported first
        raise SteeringError(_not_running(run_id), run_id=run_id)
    return queue.post(run_id, text, source=source)


def is_active(run_id: str) -> bool:
    """True while some runtime in this process drives ``run_id``."""
    with _lock:
        return run_id in _active


__all__ = ["MAX_MESSAGE_CHARS", "SteerMessage", "SteeringQueue", "is_active", "post"]
