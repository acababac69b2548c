"""``run_status``: what a stored run is doing now, as every front end shows it.

``live`` (a process holds its lease and is driving it; ``holder`` names it),
``interrupted`` (not finished, nobody driving: Ctrl-C, SIGTERM, a crash or a
killed process; resumable with ``avo runs resume``), ``paused`` (waiting for
a person, e.g. an approval), or the final state of a finished run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from avo.models import RunRecord
from avo.ops.leases import Holder, current_holder
from avo.state import RunState, is_terminal

LIVE = "live"
INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class RunStatus:
    """A run head plus whether someone is driving it."""

    run: RunRecord
    activity: str
    holder: Holder | None

    @property
    def label(self) -> str:
        """``live (avo:host:12)``, ``interrupted``, or the final state."""
        if self.activity == LIVE and self.holder is not None:
            return f"live ({self.holder.owner})"
        return self.activity


async def run_status(store: Any, run: RunRecord, *, pause_reason: str | None = None) -> RunStatus:
    """The activity of ``run``: live, interrupted, paused, or its final state."""
    if is_terminal(run.state):
        return RunStatus(run, run.state.value, None)
    holder = await current_holder(store, run.run_id)
    if holder is not None and holder.alive is not False:
        return RunStatus(run, LIVE, holder)
    if run.state is RunState.PAUSED and pause_reason not in (None, INTERRUPTED):
        return RunStatus(run, f"paused ({pause_reason})", None)
    return RunStatus(run, INTERRUPTED, None)


__all__ = ["INTERRUPTED", "LIVE", "RunStatus", "run_status"]
