"""``avo runs``: list, inspect, resume, cancel, approve/deny/answer, diff and gc stored runs.

Every subcommand opens the event store of the one configuration resolution
(``-d``, ``AVO_DATABASE_PATH``, avo.toml ``[store] location``, the user
config, ``avo.db``) through :func:`avo.compose.open_store`, so any installed
store plugin works. Errors are one line ``avo: {message}`` and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from avo.cli._context import open_store, resolve_run_id
from avo.config import DEFAULT_DATABASE


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo runs``'s subcommands."""
    database_help = "event store: a file path or a store URL (default: the resolved config)"
    parser.add_argument("-d", "--database", default=None, metavar="LOCATION", help=database_help)
    sub = parser.add_subparsers(dest="runs_command", metavar="SUBCOMMAND", required=True)

    def add(name: str, help_text: str, *, json_output: bool = True) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=help_text)
        # SUPPRESS: a subcommand without -d keeps `avo runs -d X` / `avo -d X runs`.
        command.add_argument(
            "-d", "--database", default=argparse.SUPPRESS, metavar="LOCATION", help=database_help
        )
        if json_output:
            command.add_argument("--json", action="store_true", help="print JSON")
        return command

    listing = add("list", "list stored runs, newest first, with who is driving the live ones")
    listing.add_argument(
        "--pending",
        action="store_true",
        help="what paused runs wait for: approvals and questions, with their call ids",
    )
    listing.add_argument(
        "--tag",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="only runs whose user_state has KEY (a dotted path, e.g. eval.case) equal to VALUE; "
        "repeat to require several",
    )
    inspect_cmd = add("inspect", "print a run's trace (every event, errors in full)")
    inspect_cmd.add_argument("run_id", metavar="RUN_ID", help="run id (or a unique prefix)")
    resume = add("resume", "continue an interrupted run with the runtime it was composed from")
    resume.add_argument("run_id", metavar="RUN_ID", help="run id (or a unique prefix)")
    resume.add_argument(
        "--config", "-c", default=None, metavar="FILE", help="for runs with no recorded config"
    )
    resume.add_argument(
        "--workspace", default=None, metavar="DIR", help="bind workspace tools here instead"
    )
    resume.add_argument(
        "--fail-open-tools",
        action="store_true",
        help="a tool call cut off by a crash gets a failed result (effect unknown) "
        "instead of refusing to resume",
    )
    resume.add_argument("--quiet", "-q", action="store_true", help="print the answer only")
    cancel = add("cancel", "end an interrupted run for good (cancelled / user_cancelled)")
    cancel.add_argument("run_id", metavar="RUN_ID", help="run id (or a unique prefix)")
    cancel.add_argument("--reason", default="cancelled by the user", help="recorded reason")
    from avo.cli._runs_approval import configure as configure_answers

    configure_answers(add)  # approve, deny, answer
    diff = add("diff", "structural diff of two runs: states, tool calls, outputs, tokens")
    diff.add_argument("run_a", metavar="RUN_A")
    diff.add_argument("run_b", metavar="RUN_B")
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


# ------------------------------------------------------------------ subcommands


async def _list(store: Any, args: argparse.Namespace) -> int:
    if getattr(args, "pending", False):
        from avo.cli._runs_approval import list_pending

        return await list_pending(store, args)
    from avo.cli._runs_list import list_runs

    return await list_runs(store, args)


async def _answer(store: Any, args: argparse.Namespace) -> int:
    from avo.cli._runs_approval import answer_question, approve_or_deny

    if args.runs_command == "answer":
        return await answer_question(store, args)
    return await approve_or_deny(store, args)


async def _inspect(store: Any, args: argparse.Namespace) -> int:
    from avo.cli._output import print_json
    from avo.tracing import TraceInspector

    run_id = await resolve_run_id(store, args.run_id)
    trace = await TraceInspector(store).inspect(run_id)
    if args.json:
        print_json(
            {
                "run_id": trace.run_id,
                "final_state": trace.final_state,
                "stop_reason": trace.stop_reason,
                "steps": trace.steps,
                "duration_seconds": trace.duration_seconds,
                "token_usage": trace.token_usage.model_dump(mode="json"),
                "events": [
                    {
                        "sequence": e.sequence,
                        "created_at": e.created_at.isoformat(),
                        "event_type": e.event_type.value,
                        "summary": e.summary,
                        "error": e.error,
                        "payload": e.payload,
                    }
                    for e in trace.entries
                ],
            }
        )
        return 0
    print(trace.to_text())
    return 0


async def _resume(store: Any, args: argparse.Namespace) -> int:
    from avo.cli._runs_resume import resume_run

    return await resume_run(store, args)


async def _cancel(store: Any, args: argparse.Namespace) -> int:
    from avo.cli._output import print_json
    from avo.ops import cancel

    run_id = await resolve_run_id(store, args.run_id)
    result = await cancel(store, run_id, reason=args.reason, environ=args.avo_environ)
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        print(f"cancelled run {run_id} ({result.stop_reason.value if result.stop_reason else '-'})")
    return 0


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
    "cancel": _cancel,
    "approve": _answer,
    "deny": _answer,
    "answer": _answer,
    "diff": _diff,
    "gc": _gc,
}


async def _main(args: argparse.Namespace) -> int:
    store, location = await open_store(args)
    args.avo_store_location = location
    try:
        return await _COMMANDS[args.runs_command](store, args)
    finally:
        await store.close()


def run(args: argparse.Namespace) -> int:
    """Run one ``avo runs`` subcommand."""
    return asyncio.run(_main(args))


__all__ = ["DEFAULT_DATABASE", "configure", "resolve_run_id", "run"]
