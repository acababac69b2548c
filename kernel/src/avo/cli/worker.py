"""``avo worker --engine NAME``: serve as one of an engine's workers until stopped.

The worker's runtime (provider, tools, permission mode, hooks, store) is
composed from the resolved configuration, as ``avo run`` composes its own:
flags > environment > avo.toml > user config. The engine decides how runs
reach it (for ``temporal``: a task queue, see docs/temporal.md).

Stopping: SIGTERM or SIGINT (Ctrl-C) asks the worker to stop. It takes no new
work, gives the calls in flight ``--stop-seconds`` (10) to finish, hands the
rest back to the other workers and exits 0. The process is gone within
``--stop-seconds`` + 5 s whatever it was doing (a tool thread that does not
end, an event loop that does not yield: it is ended then); a second signal
ends it at once. The runs it was driving go on on the other workers.
``--exit-with-parent`` (or ``AVO_WORKER_EXIT_WITH_PARENT=1``) makes a worker
started by another process stop the same way when that process dies, so a
killed supervisor, test or benchmark leaves no worker behind.

Exit status: 0 stopped, 2 bad input (an unknown engine, bad settings, an
unreachable engine server).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Mapping
from typing import Any

from avo.exceptions import ConfigError

STOP_SECONDS = 10.0
"""How long calls in flight may take to finish once a worker is asked to stop."""

FORCE_MARGIN = 5.0
"""After ``--stop-seconds``, how long the process may take to exit before it is ended."""

PARENT_POLL_SECONDS = 0.5
EXIT_WITH_PARENT = "AVO_WORKER_EXIT_WITH_PARENT"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo worker``'s arguments."""
    parser.add_argument(
        "--engine", metavar="NAME", help="engine plugin to serve ([engine] name, AVO_ENGINE)"
    )
    parser.add_argument(
        "--task-queue", metavar="QUEUE", help="where the engine hands this worker its runs"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="how many model and tool calls this worker runs at once (engine default if unset)",
    )
    parser.add_argument(
        "--stop-seconds",
        type=float,
        metavar="S",
        help=f"on SIGTERM/Ctrl-C, how long calls in flight may take to finish before they are "
        f"handed to other workers (default {STOP_SECONDS:g})",
    )
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help=f"stop when the process that started this worker dies ({EXIT_WITH_PARENT}=1)",
    )
    parser.add_argument(
        "--config",
        "-c",
        default=None,
        metavar="FILE",
        help="avo.toml or pyproject.toml with [tool.avo] (default: ./avo.toml if present)",
    )
    parser.add_argument(
        "-d",
        "--database",
        default=None,
        metavar="LOCATION",
        help="event store: a file or a store URL ([store] location, AVO_DATABASE_PATH, avo.db)",
    )
    parser.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="directory workspace tools work in (default: the current directory)",
    )


def _engine(args: argparse.Namespace) -> tuple[Any, Any]:
    from avo.cli._context import resolved
    from avo.engines import open_engine

    config = resolved(args, engine=args.engine)
    if args.concurrency is not None and args.concurrency < 1:
        raise ConfigError(
            f"--concurrency {args.concurrency}: give a positive number of calls to run at once",
            key="concurrency",
        )
    if args.stop_seconds is not None and not 0 <= args.stop_seconds <= 3600:
        raise ConfigError(
            f"--stop-seconds {args.stop_seconds:g}: give how many seconds (0 to 3600) calls in "
            "flight may take to finish when the worker stops",
            key="stop_seconds",
        )
    table = config.config.engine
    if table is None:
        from avo.plugins.manager import PluginManager

        names = ", ".join(PluginManager(environ=config.environ).names("engine")) or "none"
        raise ConfigError(
            f"no engine to serve: pass --engine NAME, set AVO_ENGINE or [engine] name in "
            f"avo.toml (installed engines: {names})",
            key="engine.name",
        )
    engine = open_engine(
        table.name,
        settings=table.settings,
        environ=config.environ,
        source=config.source("engine.name"),
    )
    return config, engine


class _Stopper:
    """Stops the worker once asked (a signal, or the parent gone), and makes sure it ends.

    The request cancels the engine's ``serve`` task from whatever thread or
    signal handler asks; a timer thread ends the process ``bound`` seconds
    later if it is still there (its event loop stuck, a tool thread that does
    not return). A second request ends it at once.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], bound: float):
        self.loop, self.task, self.bound = loop, task, bound
        self.why: str | None = None
        self._lock = threading.Lock()

    def request(self, why: str) -> None:
        with self._lock:
            first = self.why is None
            if first:
                self.why = why
        if not first:
            _say(f"avo: {why} again: stopping now")
            os._exit(0)
        _say(f"avo: {why}: stopping (calls in flight get {self.bound - FORCE_MARGIN:g} s)")
        timer = threading.Timer(self.bound, self._force)
        timer.daemon = True
        timer.start()
        with contextlib.suppress(RuntimeError):  # a closed loop: the process is on its way out
            self.loop.call_soon_threadsafe(self.task.cancel)

    def on_signal(self, signum: int, frame: Any) -> None:
        self.request(signal.Signals(signum).name)

    def _force(self) -> None:
        _say(
            f"avo: the worker did not stop within {self.bound:g} s (a call or thread still "
            "running); ending it now, its calls are retried on other workers"
        )
        os._exit(0)


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _watch_parent(stopper: _Stopper, parent: int) -> None:
    """Ask ``stopper`` to stop once this process's parent is no longer ``parent``."""

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(PARENT_POLL_SECONDS)
        stopper.request(f"parent process {parent} exited")

    threading.Thread(target=watch, name="avo-worker-parent", daemon=True).start()


def _wants_parent_watch(args: argparse.Namespace, environ: Mapping[str, str]) -> bool:
    raw = environ.get(EXIT_WITH_PARENT, "").strip().lower()
    return bool(args.exit_with_parent) or raw in {"1", "true", "yes", "on"}


async def _serve(engine: Any, options: Any, *, parent: int | None = None) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(engine.serve(options))
    stop = options.stop_seconds if options.stop_seconds is not None else STOP_SECONDS
    stopper = _Stopper(loop, task, stop + FORCE_MARGIN)
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:  # a Python-level handler: it runs even when the event loop does not get a turn
            signal.signal(signum, stopper.on_signal)
        except (ValueError, OSError):  # not the main thread
            continue
    if parent is not None:
        _watch_parent(stopper, parent)
    try:
        await task
    except asyncio.CancelledError:
        if stopper.why is None:
            raise
        print(f"avo: {engine.name} worker stopped", file=sys.stderr, flush=True)
    return 0


def run(args: argparse.Namespace) -> int:
    """Serve until stopped; 0 when stopped by a signal (or the parent's exit)."""
    from avo.engines import WorkerOptions
    from avo.gc_tuning import tune_gc_for_server

    parent = os.getppid()  # before anything else: the process that started this one
    config, engine = _engine(args)
    # a long-running server: freeze what start-up loaded, fewer collections (an engine may
    # call it again once its own worker is built; see docs/operations.md)
    tune_gc_for_server(config.environ)
    options = WorkerOptions(
        resolved=config,
        workspace=args.workspace,
        task_queue=args.task_queue,
        concurrency=args.concurrency,
        stop_seconds=args.stop_seconds,
    )
    watch = _wants_parent_watch(args, config.environ)
    return asyncio.run(_serve(engine, options, parent=parent if watch else None))


__all__ = ["configure", "run"]
