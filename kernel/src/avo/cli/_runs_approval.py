"""``avo runs approve|deny|answer`` and ``avo runs list --pending``: answer a paused run.

A run that waits for a person (an approval, or a question from an
``ask_user``-style tool) is ``paused``; any process that shares the store can
answer it with these commands (each is :mod:`avo.ops.approval`), then
continue it with ``avo runs resume RUN_ID``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from avo.cli._context import resolve_run_id


def configure(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add the subcommands through ``avo runs``'s ``add(name, help)``."""
    for name, verb in (("approve", "let"), ("deny", "refuse")):
        command = add(name, f"{verb} a paused run's tool call (then: avo runs resume RUN_ID)")
        command.add_argument("run_id", metavar="RUN_ID", help="run id (or a unique prefix)")
        command.add_argument(
            "call_id",
            nargs="?",
            default=None,
            metavar="CALL_ID",
            help="the waiting call (or a unique prefix); optional when only one waits",
        )
        command.add_argument(
            "--reason",
            "-r",
            default=None,
            help="why (for deny: what the model is told)"
            if name == "deny"
            else "why (recorded with the answer)",
        )
        command.add_argument("--all", action="store_true", help="every waiting approval")
        command.add_argument("--by", default=None, metavar="NAME", help="who answers")
    command = add("answer", "answer a paused run's question (then: avo runs resume RUN_ID)")
    command.add_argument("run_id", metavar="RUN_ID", help="run id (or a unique prefix)")
    command.add_argument(
        "words",
        nargs="+",
        metavar="[CALL_ID] TEXT",
        help="the answer (- reads it from stdin); name the call when several wait",
    )
    command.add_argument("--by", default=None, metavar="NAME", help="who answers")


def _row(request: Any) -> dict[str, Any]:
    return {
        "run_id": request.run_id,
        "tool_call_id": request.tool_call_id,
        "kind": request.kind.value,
        "tool": request.tool_name,
        "arguments": request.arguments,
        "risk": request.risk,
        "reason": request.reason,
        "rule": request.rule,
        "model_reason": request.model_reason,
        "question": request.question,
        "choices": list(request.choices),
        "requested_at": request.requested_at.isoformat() if request.requested_at else None,
        "expires_at": request.expires_at.isoformat() if request.expires_at else None,
    }


async def list_pending(store: Any, args: argparse.Namespace) -> int:
    """``avo runs list --pending``: what every paused run waits for."""
    from avo.cli._output import print_json, print_table, short
    from avo.models import utc_now
    from avo.ops.approval import pending_requests

    requests = await pending_requests(store)
    if args.json:
        print_json([_row(r) for r in requests])
        return 0
    if not requests:
        print(f"no run waits for a person in {args.avo_store_location}")
        return 0
    now = utc_now()
    rows = [
        (
            r.run_id,
            r.tool_call_id,
            r.kind.value,
            "expired"
            if r.expired(now)
            else (f"{r.expires_at:%Y-%m-%d %H:%M}" if r.expires_at else "-"),
            short(r.summary(), 80),
        )
        for r in requests
    ]
    print_table(args, ("RUN ID", "CALL ID", "KIND", "EXPIRES", "WAITING FOR"), rows)
    return 0


async def approve_or_deny(store: Any, args: argparse.Namespace) -> int:
    """``avo runs approve|deny RUN_ID [CALL_ID]``."""
    from avo.ops.approval import approve, deny
    from avo.ops.leases import waiting_here

    run_id = await resolve_run_id(store, args.run_id)
    waiter = await waiting_here(store, run_id)  # a prompt there picks the answer up
    operation = approve if args.runs_command == "approve" else deny
    answered = await operation(
        store,
        run_id,
        args.call_id,
        reason=args.reason,
        by=args.by,
        all_calls=args.all,
        via="cli",
        environ=args.avo_environ,
    )
    verb = "approved" if operation is approve else "denied"
    return _report(args, run_id, answered, verb, waiter)


async def answer_question(store: Any, args: argparse.Namespace) -> int:
    """``avo runs answer RUN_ID [CALL_ID] TEXT``."""
    from avo.exceptions import ConfigError
    from avo.ops.approval import answer
    from avo.ops.leases import waiting_here

    run_id = await resolve_run_id(store, args.run_id)
    waiter = await waiting_here(store, run_id)
    words = list(args.words)
    if len(words) > 2:
        raise ConfigError(
            f"avo runs answer takes [CALL_ID] TEXT, got {len(words)} words; quote the answer "
            '(avo runs answer RUN_ID "the whole answer")',
            key="words",
        )
    call_id, text = (None, words[0]) if len(words) == 1 else (words[0], words[1])
    if text == "-":
        text = sys.stdin.read().rstrip("\n")
    answered = await answer(
        store, run_id, text, call_id, by=args.by, via="cli", environ=args.avo_environ
    )
    return _report(args, run_id, answered, "answered", waiter)


def _report(
    args: argparse.Namespace, run_id: str, answered: list[Any], verb: str, waiter: Any
) -> int:
    from avo.cli._output import note, print_json

    if args.json:
        print_json({"run_id": run_id, verb: [_row(r) for r in answered]})
        return 0
    for request in answered:
        print(f"{verb} {request.tool_call_id} ({request.tool_name}) of run {run_id}")
    if waiter is not None:
        note(f"the prompt waiting on this run ({waiter.owner}) continues it now", args=args)
    else:
        note(f"continue the run with: avo runs resume {run_id}", args=args)
    return 0


__all__ = ["answer_question", "approve_or_deny", "configure", "list_pending"]
