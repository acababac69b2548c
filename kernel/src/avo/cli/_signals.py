"""Ctrl-C and SIGTERM while a run is driven: interrupt first, quit on the second.

The first SIGINT (Ctrl-C) or SIGTERM asks the runtime to interrupt the run:
a tool cut short gets a failed result saying so, the run becomes ``paused``
and ``avo runs resume RUN_ID`` continues it. A second signal exits at once
(status 130); the run then stays resumable from its last checkpoint, as after
a crash.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interrupts(
    interrupt: Callable[[str], bool], *, run_id: str, quiet: bool = False
) -> Iterator[None]:
    """Route SIGINT/SIGTERM to ``interrupt(detail)`` while the block runs."""
    loop = asyncio.get_running_loop()
    hits = {"count": 0}
    main = asyncio.current_task()

    # after the terminal's "^C", start on a fresh line
    fresh = "\n" if sys.stderr.isatty() else ""

    def hit(name: str) -> None:
        hits["count"] += 1
        if hits["count"] > 1:
            print(
                f"{fresh}avo: quitting now; run {run_id} stays resumable from its last checkpoint "
                f"(avo runs resume {run_id})",
                file=sys.stderr,
                flush=True,
            )
            os._exit(130)
        if not quiet:
            print(
                f"{fresh}avo: interrupting run {run_id} ({name}); "
                "press Ctrl-C again to quit at once",
                file=sys.stderr,
                flush=True,
            )
        if not interrupt(f"{name} received") and main is not None:
            main.cancel()

    installed = []
    for signum in _SIGNALS:
        try:
            loop.add_signal_handler(signum, hit, signal.Signals(signum).name)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            continue
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


__all__ = ["interrupts"]
