"""``avo runs``: list, inspect, resume, diff and garbage-collect stored runs (§14).

Every subcommand takes ``--database/-d`` (a file path or a store URL; default:
``AVO_DATABASE_PATH`` or ``avo.db``) and opens it with
:func:`avo.compose.open_store`, so any installed store plugin works. Errors
print ``avo: {message}`` and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import re
import sys
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from avo.config import DEFAULT_DATABASE, database_location
from avo.exceptions import AvoError, ConfigError, RunNotFoundError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo runs``'s subcommands."""
    database_help = "event store: a file path or a store URL (default: AVO_DATABASE_PATH or avo.db)"
    parser.add_argument("-d", "--database", default=None, metavar="LOCATION", help=database_help)
    sub = parser.add_subparsers(dest="runs_command", metavar="SUBCOMMAND", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=help_text)
        # SUPPRESS: a subcommand without -d keeps `avo runs -d X` / `avo -d X runs`.
        command.add_argument(
            "-d", "--database", default=argparse.SUPPRESS, metavar="LOCATION", help=database_help
        )
        return command

    listing = add("list", "list stored runs, newest first")
    listing.add_argument(
        "--tag",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="only runs whose user_state has KEY (a dotted path, e.g. eval.case) equal to VALUE; "
        "repeat to require several",
    )
    inspect_cmd = add("inspect", "print a run's trace (RunTrace.to_text)")
    inspect_cmd.add_argument("run_id", metavar="RUN_ID", help="run id (or a unique prefix)")
    resume = add("resume", "resume a FakeProvider run from its latest checkpoint")
    resume.add_argument("run_id", metavar="RUN_ID", help="run id (or a unique prefix)")
    diff = add("diff", "structural diff of two runs: states, tool calls, outputs, tokens")
    diff.add_argument("run_a", metavar="RUN_A")
    diff.add_argument("run_b", metavar="RUN_B")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    gc = add("gc", "delete whole finished runs (events, checkpoints, ledger rows)")
    gc.add_argument(
        "--older-than",
        default=None,
        metavar="AGE",
        help="only runs last updated longer ago than AGE (e.g. 30d, 12h, 45m, 2w); "
        "default 30d unless --keep-last is given",
    )
    gc.add_argument(
        "--keep-last",
        type=int,
        default=None,
        metavar="N",
        help="always keep the N most recently created matching finished runs",
    )
    gc.add_argument(
        "--status",
        default=None,
        metavar="STATES",
        help="comma-separated terminal states to collect (default: completed,failed,stopped,"
        "cancelled)",
    )
    gc.add_argument("--dry-run", action="store_true", help="print what would be deleted")


def _location(args: argparse.Namespace) -> str:
    raw = getattr(args, "database", None)
    if raw is None:
        raw = database_location(getattr(args, "avo_environ", None))
    text = str(raw)
    match = _SCHEME.match(text)
    # a file location: a bare path, or a sqlite:///path URL
    path = text if match is None else (text[9:] if text.startswith("sqlite://") else None)
    if path is not None and path.startswith("/") and match is not None:
        path = path[1:]  # sqlite:///relative.db, sqlite:////absolute.db
    if path is not None and not Path(path).exists():
        raise ConfigError(
            f"no event store at {text} (the file does not exist); pass --database PATH or a "
            "store URL",
            key="database",
        )
    return text


async def _open(args: argparse.Namespace) -> Any:
    from avo.compose import open_store

    store = open_store(
        _location(args),
        manager=getattr(args, "avo_plugins", None),
        environ=getattr(args, "avo_environ", None),
    )
    if inspect.isawaitable(store):
        store = await store
    return store


async def resolve_run_id(store: Any, text: str) -> str:
    """``text`` if it is a run id, else the one run whose id starts with it."""
    if await store.get_run(text) is not None:
        return text
    matches: list[str] = [
        run.run_id for run in await store.list_runs() if run.run_id.startswith(text)
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RunNotFoundError(f"run {text!r} was not found in the event store", run_id=text)
    shown = ", ".join(sorted(matches)[:5])
    raise RunNotFoundError(
        f"run id prefix {text!r} is ambiguous ({len(matches)} runs: {shown}); give more of the id",
        run_id=text,
    )


# ------------------------------------------------------------------ subcommands


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


async def _list(store: Any, args: argparse.Namespace) -> int:
    keep = _tag_filter(getattr(args, "tag", None))
    runs = [run for run in await store.list_runs() if keep(run)]
    if not runs:
        tagged = " with " + ", ".join(args.tag) if getattr(args, "tag", None) else ""
        print(f"no runs{tagged} in {_location(args)}")
        return 0
    header = ("RUN ID", "STATE", "STOP REASON", "STEPS", "TOKENS", "CREATED", "TASK")
    rows = [
        (
            run.run_id,
            run.state.value,
            run.stop_reason.value if run.stop_reason else "-",
            str(run.steps),
            str(run.token_usage.total_tokens),
            run.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            _short(run.task, 48),
        )
        for run in runs
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip())
    return 0


async def _inspect(store: Any, args: argparse.Namespace) -> int:
    from avo.tracing import TraceInspector

    run_id = await resolve_run_id(store, args.run_id)
    print((await TraceInspector(store).inspect(run_id)).to_text())
    return 0


async def _resume(store: Any, args: argparse.Namespace) -> int:
    from avo.cli._runs_resume import resume_with_fake_provider

    run_id = await resolve_run_id(store, args.run_id)
    result = await resume_with_fake_provider(store, run_id)
    usage = result.token_usage
    print(f"run id:      {result.run_id}")
    print(f"status:      {result.status.value}")
    print(f"stop reason: {result.stop_reason.value if result.stop_reason else '-'}")
    print(f"steps:       {result.steps}")
    print(
        f"tokens:      {usage.total_tokens} (input {usage.input_tokens}, output "
        f"{usage.output_tokens})"
    )
    if result.output:
        print(f"output:      {result.output}")
    if result.error:
        print(f"error:       {result.error}")
    return 0 if result.status.value == "completed" else 1


async def _diff(store: Any, args: argparse.Namespace) -> int:
    from avo.cli._runs_diff import diff_runs

    run_a = await resolve_run_id(store, args.run_a)
    run_b = await resolve_run_id(store, args.run_b)
    diff = await diff_runs(store, run_a, run_b)
    print(diff.to_json() if args.json else diff.to_text())
    return 0


async def _gc(store: Any, args: argparse.Namespace) -> int:
    from avo.cli._runs_gc import collect

    return await collect(store, args)


_COMMANDS: Mapping[str, Callable[[Any, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "list": _list,
    "inspect": _inspect,
    "resume": _resume,
    "diff": _diff,
    "gc": _gc,
}


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def _main(args: argparse.Namespace) -> int:
    store = await _open(args)
    try:
        return await _COMMANDS[args.runs_command](store, args)
    finally:
        await store.close()


def run(args: argparse.Namespace) -> int:
    """Run one ``avo runs`` subcommand; avo errors print ``avo: {message}`` and return 2."""
    try:
        return asyncio.run(_main(args))
    except AvoError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        return 2


__all__ = ["DEFAULT_DATABASE", "configure", "resolve_run_id", "run"]
