"""``steer``: post a message to a run while it works.

The message joins the run's transcript as a user message right before the
run's next model call and is recorded as a ``run_steered`` event (message,
source, when it was posted, the step it reached). Only a run being driven in
this process can be steered; anything else is refused at once with
:class:`~avo.exceptions.SteeringError`, so a message is never silently
queued for a run that will not read it. A message still queued when the run
ends (it answered before calling the model again) is not delivered: its
:attr:`SteerMessage.delivered` stays False and the caller can send it as the
next task of the run's session.

::

    ticket = steer(run_id, "use the staging database, not production")
    ...
    ticket.delivered  # True once the run added it to its transcript
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo._steering import SteerMessage, post
from avo.exceptions import SteeringError

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime


def steer(
    run_id: str,
    message: str,
    *,
    runtime: AgentRuntime | None = None,
    source: str = "api",
    on_resume: bool = False,
) -> SteerMessage:
    """Queue ``message`` for the working run ``run_id``; returns its ticket.

    :param runtime: the runtime driving the run (default: whichever runtime in
        this process is driving it).
    :param source: who sent it (``"chat"``, ``"web"``, ...), recorded in the event.
    :param on_resume: ``runtime`` is about to resume the stopped run ``run_id``
        (e.g. from ``avo.ops.resume``'s ``on_composed``): the message is
        delivered before the resumed run's first model call. Refused when
        another runtime drives the run now; if the resume never starts, the
        message is never delivered (``runtime`` must be given).
    :raises SteeringError: the run is not working in this process, or the
        message is empty or too long.
    """
    if runtime is not None:
        return runtime._steering.post(run_id, message, source=source, on_resume=on_resume)
    if on_resume:
        raise SteeringError(
            f"steering run {run_id!r} on resume needs the runtime that will resume it "
            "(steer(..., runtime=runtime, on_resume=True))",
            run_id=run_id,
        )
    return post(run_id, message, source=source)


__all__ = ["SteerMessage", "steer"]
