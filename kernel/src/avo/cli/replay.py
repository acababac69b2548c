"""``avo replay RUN_ID... | --all``: re-drive stored runs through today's code, offline.

No provider and no tool is called: recorded responses and results are played
back (see :mod:`avo.ops.replay`). Prints ``ok`` or the first divergent event
per run; exits 1 when any run diverged, so ``avo replay --all`` checks an
upgrade against yesterday's runs in CI.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from avo.exceptions import AvoError


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo replay``'s arguments."""
    parser.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="run ids (or unique prefixes)")
    parser.add_argument("--all", action="store_true", help="replay every run in the store")
    parser.add_argument(
        "-d", "--database", default=None, metavar="LOCATION", help="event store (file or URL)"
    )
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")


async def _main(args: argparse.Namespace) -> int:
    from avo.cli._context import open_store, resolve_run_id
    from avo.cli._output import print_json
    from avo.ops.replay import replay

    if not args.run_ids and not args.all:
        raise AvoError("avo replay needs RUN_ID... or --all")
    store, _ = await open_store(args)
    try:
        if args.all:
            ids = [run.run_id for run in reversed(await store.list_runs())]
        else:
            ids = [await resolve_run_id(store, text) for text in args.run_ids]
        reports: list[Any] = []
        for run_id in ids:
            reports.append(await replay(store, run_id, environ=args.avo_environ))
            if not args.json:
                _print(reports[-1])
    finally:
        await store.close()
    if args.json:
        print_json([report.as_dict() for report in reports])
    elif len(reports) > 1:
        diverged = sum(1 for report in reports if not report.ok)
        print(f"replayed {len(reports)} runs: {len(reports) - diverged} ok, {diverged} diverged")
    return 0 if all(report.ok for report in reports) else 1


def _print(report: Any) -> None:
    if report.ok:
        line = f"{report.run_id}  ok  ({report.compared} events match"
        line += f"; {report.recorded_state})"
    else:
        line = f"{report.run_id}  DIVERGED at {report.divergence.describe()}"
    print(line)
    for note in report.notes:
        print(f"    note: {note}")


def run(args: argparse.Namespace) -> int:
    """Replay the runs; 0 when none diverged, 1 otherwise."""
    return asyncio.run(_main(args))


__all__ = ["configure", "run"]
