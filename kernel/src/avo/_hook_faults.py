"""Make hook and run-observer faults visible: a HOOK_FAILED event and a warning.

A run hook (:class:`avo.hooks.HookRegistry`) or a plugin's run-lifecycle hook
(``avo_run_started``, ``avo_event_appended``, ``avo_run_finished``) that raises
never changes the run silently. Each fault is logged as a warning on the
``avo.hooks`` logger (Python prints warnings to stderr when nothing else is
configured) and, while the run's log is still open, recorded as a HOOK_FAILED
event. A fault is reported once per run per hook, so an observer that raises on
every event does not flood the log (or observe its own reports forever).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from avo.events import EventType

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.hooks import HookFault
    from avo.runtime import AgentRuntime

logger = logging.getLogger("avo.hooks")


def _record(
    rt: AgentRuntime,
    ctx: _RunContext | None,
    key: tuple[str, str, str],
    payload: dict[str, Any],
    warning: str,
) -> None:
    if ctx is not None:
        if key in ctx.reported_faults:
            return
        ctx.reported_faults.add(key)
    logger.warning("%s", rt.redactor.text(warning))
    if ctx is None or ctx.log.terminal or not ctx.log.created:
        return  # the run's log is closed (or not open yet): the warning is the report
    from avo.runtime_persistence import append

    append(rt, ctx, EventType.HOOK_FAILED, payload)


def report_hook_faults(
    rt: AgentRuntime,
    ctx: _RunContext | None,
    event: str,
    faults: Iterable[HookFault],
    *,
    outcome: str,
    run_id: str,
) -> None:
    """Report run-hook faults at ``event``; ``outcome`` is ``denied`` or ``ignored``."""
    for fault in faults:
        consequence = "the tool call is denied" if outcome == "denied" else "the run goes on"
        _record(
            rt,
            ctx,
            ("hook", fault.hook, event),
            {
                "source": "hook",
                "hook": fault.hook,
                "event": event,
                "error_type": fault.error_type,
                "error": fault.error,
                "outcome": outcome,
            },
            f"avo: run {run_id}: {event} {fault}; {consequence}",
        )


def report_observer_faults(
    rt: AgentRuntime, ctx: _RunContext | None, hook_name: str, problems: Iterable[Any], run_id: str
) -> None:
    """Report plugins whose ``hook_name`` observer raised (PluginProblems)."""
    for problem in problems:
        origin = f"{problem.package} {problem.version}" if problem.package else "in-process"
        _record(
            rt,
            ctx,
            ("observer", f"{problem.package}:{problem.name}", hook_name),
            {
                "source": "observer",
                "hook": hook_name,
                "plugin": problem.name,
                "package": problem.package,
                "event": hook_name,
                "error": problem.reason,
                "outcome": "ignored",
            },
            f"avo: run {run_id}: plugin {problem.name!r} ({origin}) {problem.reason}; "
            "the run goes on",
        )


__all__ = ["report_hook_faults", "report_observer_faults"]
