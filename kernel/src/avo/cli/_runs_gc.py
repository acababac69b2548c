"""``avo runs gc``: delete whole finished runs, one transaction each, never a running one."""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timedelta
from typing import Any

from avo.exceptions import ConfigError, StorageError
from avo.models import RunRecord, utc_now
from avo.state import TERMINAL_STATES, RunState

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DEFAULT_AGE = "30d"


def parse_age(text: str) -> timedelta:
    """``30d``, ``12h``, ``45m``, ``90s``, ``2w`` as a timedelta."""
    match = _AGE.match(text)
    if match is None:
        raise ConfigError(
            f"--older-than {text!r} is not an age; use a number and a unit s, m, h, d or w "
            "(e.g. 30d)",
            key="older_than",
        )
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def parse_statuses(text: str | None) -> set[RunState]:
    """The terminal states named in ``completed,failed,...`` (all terminal states when None)."""
    if text is None:
        return set(TERMINAL_STATES)
    chosen: set[RunState] = set()
    allowed = ", ".join(sorted(state.value for state in TERMINAL_STATES))
    for word in filter(None, (part.strip().lower() for part in text.split(","))):
        try:
            state = RunState(word)
        except ValueError:
            state = None
        if state is None or state not in TERMINAL_STATES:
            raise ConfigError(
                f"--status {word!r} is not a terminal state; gc only deletes finished runs "
                f"({allowed})",
                key="status",
            )
        chosen.add(state)
    if not chosen:
        raise ConfigError(f"--status names no state; use some of {allowed}", key="status")
    return chosen


def select(
    runs: list[RunRecord],
    *,
    statuses: set[RunState],
    older_than: timedelta | None,
    keep_last: int | None,
    now: datetime,
) -> tuple[list[RunRecord], int]:
    """(runs to delete, how many matching runs were kept). ``runs`` is newest first."""
    matching = [run for run in runs if run.state in statuses and run.state in TERMINAL_STATES]
    kept = 0
    candidates = matching
    if keep_last is not None:
        kept += min(keep_last, len(matching))
        candidates = matching[keep_last:]
    if older_than is not None:
        cutoff = now - older_than
        old = [run for run in candidates if run.updated_at < cutoff]
        kept += len(candidates) - len(old)
        candidates = old
    return candidates, kept


async def collect(store: Any, args: argparse.Namespace, *, now: datetime | None = None) -> int:
    """Run ``avo runs gc`` against an open store; prints each run removed (or to remove)."""
    if args.keep_last is not None and args.keep_last < 0:
        raise ConfigError(f"--keep-last must be >= 0, got {args.keep_last}", key="keep_last")
    age_text = args.older_than
    if age_text is None and args.keep_last is None:
        age_text = DEFAULT_AGE
    older_than = parse_age(age_text) if age_text is not None else None
    statuses = parse_statuses(args.status)
    delete = getattr(store, "delete_run", None)
    if delete is None:
        raise StorageError(
            f"the store {type(store).__name__} cannot delete runs (it has no delete_run); "
            "gc needs a store with the retention capability"
        )
    runs = await store.list_runs()
    chosen, kept = select(
        runs,
        statuses=statuses,
        older_than=older_than,
        keep_last=args.keep_last,
        now=now or utc_now(),
    )
    verb = "would delete" if args.dry_run else "deleted"
    as_json = getattr(args, "json", False)
    removed: list[RunRecord] = []
    for run in chosen:
        if not args.dry_run and not await delete(run.run_id):
            continue  # removed meanwhile by someone else
        removed.append(run)
        finished = run.updated_at.strftime("%Y-%m-%d %H:%M:%S")
        if not as_json:
            print(f"{verb} {run.run_id}  {run.state.value}  finished {finished}  {run.steps} steps")
    active = sum(1 for run in runs if run.state not in TERMINAL_STATES)
    if as_json:
        import json

        print(
            json.dumps(
                {
                    "dry_run": bool(args.dry_run),
                    "deleted": [run.run_id for run in removed],
                    "kept_finished": kept,
                    "unfinished_untouched": active,
                },
                indent=2,
            )
        )
        return 0
    print(
        f"{verb} {len(removed)} run{'s' if len(removed) != 1 else ''}; kept {kept} matching "
        "finished, "
        f"{active} unfinished untouched"
    )
    return 0


__all__ = ["DEFAULT_AGE", "collect", "parse_age", "parse_statuses", "select"]
