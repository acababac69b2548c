"""``avo runs list``: stored runs, newest first; a live run names who is driving it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from avo.cli._output import print_json, print_table, short
from avo.exceptions import ConfigError

_STYLES = {
    "completed": "green",
    "failed": "red",
    "stopped": "yellow",
    "cancelled": "magenta",
    "interrupted": "yellow",
    "live": "bold cyan",
    "paused": "cyan",
}


async def _statuses(store: Any, runs: list[Any]) -> list[Any]:
    from avo.ops.interrupt import pause_reason
    from avo.ops.status import run_status
    from avo.state import RunState

    found = []
    for run in runs:
        reason = None
        if run.state is RunState.PAUSED:
            reason = pause_reason(list(await store.get_events(run.run_id)))
        found.append(await run_status(store, run, pause_reason=reason))
    return found


def _tag_filter(tags: list[str] | None) -> Callable[[Any], bool]:
    """A predicate on a run's ``user_state`` for ``--tag KEY=VALUE`` (dotted keys)."""
    wanted: list[tuple[list[str], str]] = []
    for tag in tags or []:
        key, sep, value = tag.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"--tag {tag!r} is not KEY=VALUE; e.g. --tag eval.case=write-notes", key="tag"
            )
        wanted.append((key.strip().split("."), value))

    def matches(run: Any) -> bool:
        for path, value in wanted:
            found: Any = run.user_state
            for part in path:
                found = found.get(part) if isinstance(found, dict) else None
            if found is None or str(found) != value:
                return False
        return True

    return matches


async def list_runs(store: Any, args: argparse.Namespace) -> int:
    """Print the table (or JSON) of the runs in ``store`` (those ``--tag`` selects)."""
    tags = getattr(args, "tag", None)
    keep = _tag_filter(tags)
    runs = [run for run in await store.list_runs() if keep(run)]
    statuses = await _statuses(store, runs)
    if args.json:
        print_json(
            [
                {
                    "run_id": s.run.run_id,
                    "state": s.run.state.value,
                    "activity": s.activity,
                    "holder": s.holder.owner if s.holder else None,
                    "stop_reason": s.run.stop_reason.value if s.run.stop_reason else None,
                    "steps": s.run.steps,
                    "total_tokens": s.run.token_usage.total_tokens,
                    "created_at": s.run.created_at.isoformat(),
                    "task": s.run.task,
                }
                for s in statuses
            ]
        )
        return 0
    if not runs:
        tagged = " with " + ", ".join(tags) if tags else ""
        print(f"no runs{tagged} in {args.avo_store_location}")
        return 0
    rows = [
        (
            s.run.run_id,
            s.label,
            s.run.stop_reason.value if s.run.stop_reason else "-",
            str(s.run.steps),
            str(s.run.token_usage.total_tokens),
            s.run.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            short(s.run.task, 48),
        )
        for s in statuses
    ]
    headers = ("RUN ID", "STATUS", "STOP REASON", "STEPS", "TOKENS", "CREATED", "TASK")
    print_table(args, headers, rows, styles=_STYLES)
    return 0


__all__ = ["list_runs"]
