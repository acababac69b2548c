"""``avo runs resume RUN_ID``: continue a run with the runtime recorded in its first event.

Any provider and any tool plugin: :func:`avo.ops.resume` composes the run's
recorded configuration again (secrets from the environment). A run a live
process is driving is refused, naming the holder. Output is ``avo run``'s:
the answer on stdout, the summary on stderr, Ctrl-C interrupts again.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from avo.cli._context import resolve_run_id


async def resume_run(store: Any, args: argparse.Namespace) -> int:
    """Resume ``args.run_id`` in ``store`` and report it like ``avo run``."""
    from avo.cli._answer_prompt import terminal_answerer
    from avo.cli._output import note
    from avo.cli._progress import ProgressPrinter
    from avo.cli._run_report import report
    from avo.cli._signals import interrupts
    from avo.ops.leases import owner_name
    from avo.ops.resume import resume

    run_id = await resolve_run_id(store, args.run_id)
    quiet = args.quiet or args.json
    streamed: list[str] = []

    def on_text(text: str) -> None:
        streamed.append(text)
        sys.stdout.write(text)
        sys.stdout.flush()

    verbosity = int(getattr(args, "avo_verbose", 0) or 0)
    progress = ProgressPrinter(verbosity=verbosity, tools=(not quiet and sys.stderr.isatty()))
    holder: dict[str, Any] = {}

    def composed(composition: Any) -> None:
        composition.manager.register(progress, name="avo-cli-progress")
        holder["runtime"] = composition.runtime

    def interrupt(detail: str) -> bool:
        runtime = holder.get("runtime")
        return bool(runtime is not None and runtime.interrupt(detail))

    if not quiet:
        note(f"avo: resuming run {run_id} (store {args.avo_store_location})", args=args)
    with interrupts(interrupt, run_id=run_id, quiet=args.quiet):
        result = await resume(
            store,
            run_id,
            environ=args.avo_environ,
            config=args.config,
            workspace=args.workspace,
            stream_callback=None if args.json else on_text,
            fail_open_tool_calls=args.fail_open_tools,
            owner=owner_name("avo-resume"),
            on_composed=composed,
            answerer=terminal_answerer(),
        )
    if streamed and not streamed[-1].endswith("\n"):
        print()
    elif not streamed and result.output and not args.json:
        print(result.output)
    return await report(args, result, store, args.avo_store_location)


__all__ = ["resume_run"]
