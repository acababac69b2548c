"""Front-end operations: what the CLI, the chat REPL, the web UI and workers all call.

Each operation is one function here, recorded as events the same way whoever
calls it, so front ends never disagree about a run:

- :func:`cancel` — end a run for good (CANCELLED / user_cancelled);
- :func:`resume` — continue a stopped run with the runtime recorded in it;
- :func:`replay` — re-drive a stored run through today's code, offline, and
  report the first divergent event;
- :func:`run_status` — live (who drives it) / interrupted / paused / finished;
- interrupting a run being driven is :meth:`avo.runtime.AgentRuntime.interrupt`
  (the run becomes PAUSED and resumable, see :mod:`avo.ops.interrupt`);
- :func:`holding_lease` — drive a run while holding its lease;
- :func:`steer` — post a message to a run while it works; it joins the
  transcript before the run's next model call (a ``run_steered`` event);
- :func:`fork_session`, :func:`rewind_session` — branch a session at a turn,
  take its last turns back (runs and events stay in the store);
- :func:`approve`, :func:`deny`, :func:`answer` — answer a run paused for a
  person (a ``human_input_received`` event); :func:`pending_requests` lists
  what paused runs wait for (see :mod:`avo.ops.approval`);
- :func:`compare_runs` — two stored runs' ``runs diff`` facts and their first
  divergent event (what the web UI's compare page shows).

Names are imported lazily: ``import avo.ops`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo.lazy import lazy_exports

if TYPE_CHECKING:
    from avo.ops.approval import answer, answer_requests, approve, deny, pending_requests
    from avo.ops.cancel import cancel
    from avo.ops.compare import RunComparison, compare_runs
    from avo.ops.leases import current_holder, holding_lease, owner_name
    from avo.ops.replay import ReplayReport, replay
    from avo.ops.resume import resume
    from avo.ops.sessions import fork_session, rewind_session
    from avo.ops.status import RunStatus, run_status
    from avo.ops.steer import SteerMessage, steer

_LAZY = {
    "answer": "avo.ops.approval",
    "answer_requests": "avo.ops.approval",
    "approve": "avo.ops.approval",
    "deny": "avo.ops.approval",
    "pending_requests": "avo.ops.approval",
    "cancel": "avo.ops.cancel",
    "RunComparison": "avo.ops.compare",
    "compare_runs": "avo.ops.compare",
    "current_holder": "avo.ops.leases",
    "holding_lease": "avo.ops.leases",
    "owner_name": "avo.ops.leases",
    "ReplayReport": "avo.ops.replay",
    "replay": "avo.ops.replay",
    "resume": "avo.ops.resume",
    "fork_session": "avo.ops.sessions",
    "rewind_session": "avo.ops.sessions",
    "RunStatus": "avo.ops.status",
    "run_status": "avo.ops.status",
    "SteerMessage": "avo.ops.steer",
    "steer": "avo.ops.steer",
}

__getattr__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "ReplayReport",
    "RunComparison",
    "RunStatus",
    "SteerMessage",
    "answer",
    "answer_requests",
    "approve",
    "cancel",
    "compare_runs",
    "current_holder",
    "deny",
    "fork_session",
    "holding_lease",
    "owner_name",
    "pending_requests",
    "replay",
    "resume",
    "rewind_session",
    "run_status",
    "steer",
]
