"""``avo sessions``: list sessions and show one (its runs and where it stands).

A session is a conversation that continues across runs (``avo run --continue``
or ``--session ID``); each run keeps its own events (``avo runs inspect``).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from avo.cli._context import open_store
from avo.cli._output import note, print_json, print_table, short
from avo.exceptions import SessionError


def configure(parser: argparse.ArgumentParser) -> None:
    """``avo sessions list|show``."""
    parser.add_argument(
        "-d", "--database", default=None, metavar="LOCATION", help="event store (file or URL)"
    )
    sub = parser.add_subparsers(dest="sessions_command", required=True, metavar="COMMAND")
    listing = sub.add_parser("list", help="sessions, most recently used first")
    listing.add_argument("--limit", "-n", type=int, default=20, help="show at most N (default 20)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = sub.add_parser("show", help="a session's runs and the transcript it continues from")
    show.add_argument("session_id", metavar="ID", help="the session id (or 'latest')")
    show.add_argument("--json", action="store_true", help="print JSON")


def _sessions(store: Any, location: str) -> Any:
    from avo.sessions import session_store_of

    sessions = session_store_of(store)
    if sessions is None:
        raise SessionError(f"the event store at {location} does not keep sessions")
    return sessions


async def _list(store: Any, location: str, args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise SessionError(f"--limit {args.limit}: give a positive number of sessions")
    records = (await _sessions(store, location).list_sessions())[: args.limit]
    if args.json:
        print_json([_summary(r) for r in records])
        return 0
    if not records:
        note(f"avo: no sessions in {location}", args=args)
        return 0
    rows = [
        [
            r.session_id,
            str(len(r.run_ids)),
            r.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
            short(r.title or "-", 60),
        ]
        for r in records
    ]
    print_table(args, ["SESSION", "RUNS", "UPDATED", "TITLE"], rows)
    return 0


def _summary(record: Any) -> dict[str, Any]:
    return {
        "session_id": record.session_id,
        "title": record.title,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "run_ids": list(record.run_ids),
        "transcript_messages": len(record.transcript),
        "transcript_run_id": record.transcript_run_id,
    }


async def _show(store: Any, location: str, args: argparse.Namespace) -> int:
    sessions = _sessions(store, location)
    wanted = args.session_id
    if wanted == "latest":
        listed = await sessions.list_sessions()
        if not listed:
            raise SessionError(f"there is no session in {location}")
        wanted = listed[0].session_id
    record = await sessions.get_session(wanted)
    if record is None:
        raise SessionError(
            f"no session {wanted!r} in {location}; see avo sessions list", session_id=wanted
        )
    runs = []
    for run_id in record.run_ids:
        run = await store.get_run(run_id)
        runs.append(
            {
                "run_id": run_id,
                "state": run.state.value if run else "missing",
                "task": run.task if run else "",
                "output": run.output if run else None,
            }
        )
    if args.json:
        print_json({**_summary(record), "runs": runs, "transcript": record.transcript})
        return 0
    print(f"session:     {record.session_id}")
    print(f"title:       {record.title or '-'}")
    print(f"created:     {record.created_at.isoformat(timespec='seconds')}")
    print(f"updated:     {record.updated_at.isoformat(timespec='seconds')}")
    origin = record.transcript_run_id or "-"
    print(f"transcript:  {len(record.transcript)} messages (from run {origin})")
    rows = [
        [str(i), r["run_id"], r["state"], short(r["task"], 40), short(r["output"] or "-", 40)]
        for i, r in enumerate(runs, start=1)
    ]
    print_table(args, ["#", "RUN", "STATE", "TASK", "OUTPUT"], rows)
    return 0


async def _main(args: argparse.Namespace) -> int:
    store, location = await open_store(args)
    try:
        if args.sessions_command == "list":
            return await _list(store, location, args)
        return await _show(store, location, args)
    finally:
        await store.close()


def run(args: argparse.Namespace) -> int:
    """``avo sessions ...``; exit 0, or 2 with ``avo: message`` on bad input."""
    return asyncio.run(_main(args))


__all__ = ["configure", "run"]
