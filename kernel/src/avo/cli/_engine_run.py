"""``avo run --engine NAME`` for an engine that drives runs elsewhere: submit, then follow.

The run is handed to the engine (its workers compose their own runtime) and
followed in the event store: progress lines as its events appear, the answer
on stdout, the summary on stderr, the same exit codes as a run driven here.
A run that pauses for a person ends the command with exit 3 (the engine keeps
the run waiting: ``avo runs approve|deny|answer`` continue it there). Ctrl-C
stops following; the run goes on.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from avo.cli._run_report import EXIT_INTERRUPTED


async def submit_and_follow(args: argparse.Namespace, task: str, config: Any, engine: Any) -> int:
    """Submit ``task`` to ``engine``, follow the run in the store, report it."""
    from avo.cli._context import open_store
    from avo.cli._progress import ProgressPrinter
    from avo.cli._run_report import report
    from avo.engines import RunSubmission
    from avo.models import new_id
    from avo.ops._engine import follow

    quiet = args.quiet or args.json
    verbosity = int(getattr(args, "avo_verbose", 0) or 0)
    progress = ProgressPrinter(verbosity=verbosity, tools=not quiet and sys.stderr.isatty())
    store, location = await open_store(args, must_exist=False)
    try:
        run_id = new_id()
        submission = RunSubmission(
            task=task,
            run_id=run_id,
            system_prompt=config.config.system_prompt,
            resolved=config,
            workspace=args.workspace,
        )
        await engine.submit(submission)
        if not quiet:
            print(
                f"avo: run {run_id} submitted to the {engine.name} engine (store {location})",
                file=sys.stderr,
                flush=True,
            )
        try:
            result = await follow(store, run_id, on_event=progress.avo_event_appended)
        except (KeyboardInterrupt, asyncio.CancelledError):
            print(
                f"\navo: stopped following run {run_id}; it goes on on the {engine.name} "
                f"workers (avo runs inspect {run_id}, avo runs cancel {run_id})",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        if result.output and not args.json:
            print(result.output)
        return await report(args, result, store, location, progress.failures)
    finally:
        await store.close()


__all__ = ["submit_and_follow"]
