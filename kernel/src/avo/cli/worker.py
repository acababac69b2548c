"""``avo worker --engine NAME``: serve as one of an engine's workers until stopped.

The worker's runtime (provider, tools, permission mode, hooks, store) is
composed from the resolved configuration, as ``avo run`` composes its own:
flags > environment > avo.toml > user config. The engine decides how runs
reach it (for ``temporal``: a task queue, see docs/temporal.md). Ctrl-C or
SIGTERM stops the worker; the runs it was driving go on on the other workers.
Exit status: 0 stopped, 2 bad input (an unknown engine, bad settings, an
unreachable engine server).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from avo.exceptions import ConfigError


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


async def _serve(engine: Any, options: Any) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(engine.serve(options))
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, task.cancel)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            continue
    try:
        await task
    except asyncio.CancelledError:
        print(f"avo: {engine.name} worker stopped", file=sys.stderr, flush=True)
    return 0


def run(args: argparse.Namespace) -> int:
    """Serve until stopped; 0 when stopped by a signal."""
    from avo.engines import WorkerOptions

    config, engine = _engine(args)
    options = WorkerOptions(
        resolved=config,
        workspace=args.workspace,
        task_queue=args.task_queue,
        concurrency=args.concurrency,
    )
    return asyncio.run(_serve(engine, options))


__all__ = ["configure", "run"]
