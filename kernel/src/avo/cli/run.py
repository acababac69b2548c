"""``avo run TASK``: compose a runtime from the resolved config, drive one run, report it.

stdout carries the answer alone (streamed), so ``avo run … | next`` works;
the run id (at the start), progress and the summary go to stderr. ``--json``
prints one JSON object instead. ``TASK`` ``-`` reads the task from stdin.
Exit status: 0 completed, 1 stopped or failed, 130 interrupted (resumable),
3 paused for a person (answer with avo runs approve|deny|answer, then resume),
2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from avo.cli._session_flags import add_session_flags
from avo.exceptions import AvoError


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo run``'s arguments."""
    parser.add_argument(
        "task", metavar="TASK", help="what the agent should do; '-' reads it from stdin"
    )
    parser.add_argument(
        "--config",
        "-c",
        default=None,
        metavar="FILE",
        help="avo.toml or pyproject.toml with [tool.avo] (default: ./avo.toml if present)",
    )
    parser.add_argument("--provider", metavar="NAME", help="provider plugin ([provider] name)")
    parser.add_argument("--model", metavar="MODEL", help="model ([provider.settings] model)")
    parser.add_argument(
        "--store", metavar="NAME", help="store plugin name (default: chosen by the location)"
    )
    parser.add_argument(
        "--tool",
        action="append",
        dest="tools",
        metavar="NAME",
        help="tool plugin to enable; repeat for more (replaces the config's tools)",
    )
    parser.add_argument(
        "-d",
        "--database",
        default=None,
        metavar="LOCATION",
        help="event store: a file or a store URL ([store] location, AVO_DATABASE_PATH, avo.db)",
    )
    parser.add_argument(
        "--permission-mode", default=None, metavar="MODE", help="permission mode plugin"
    )
    parser.add_argument(
        "--system-prompt", default=None, metavar="TEXT", help="system prompt sent before the task"
    )
    parser.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="directory workspace tools work in (default: the current directory)",
    )
    parser.add_argument(
        "--engine",
        default=None,
        metavar="NAME",
        help="where the run is driven: here (in-process, the default) or an engine's workers "
        "([engine] name, AVO_ENGINE); the command follows the run either way",
    )
    parser.add_argument(
        "--attach",
        action="extend",
        nargs="+",
        default=[],
        metavar="FILE",
        help="send files with the task: PNG/JPEG/GIF/WebP images, PDFs, text files",
    )
    add_session_flags(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print the answer only (no run id, summary)"
    )


def read_task(text: str, stdin: Any = None) -> str:
    """The task: ``text``, or stdin for ``-``; refuses an empty one."""
    source = "the task"
    if text == "-":
        stream = stdin if stdin is not None else sys.stdin
        text = stream.read()
        source = "the task read from standard input"
    if not text.strip():
        raise AvoError(
            f'{source} is empty; say what the agent should do, e.g. avo run "list the '
            'TODOs in src/" (or pipe it in with avo run -)'
        )
    return text.strip()


def _attachments(files: list[str]) -> list[Any]:
    """The content blocks of ``--attach`` files (ConfigError naming a bad one)."""
    if not files:
        return []
    from avo.content_blocks import attachment

    return [attachment(path) for path in files]


def _resolve(args: argparse.Namespace) -> Any:
    from avo.cli._context import resolved
    from avo.cli.setup import offer_setup

    flags = {
        "provider": args.provider,
        "model": args.model,
        "store": args.store,
        "tools": args.tools,
        "permission_mode": args.permission_mode,
        "system_prompt": args.system_prompt,
        "engine": getattr(args, "engine", None),
    }
    config = resolved(args, **flags)
    if not config.configured and offer_setup(args):
        config = resolved(args, **flags)
    return config


async def _drive(args: argparse.Namespace, task: str) -> int:
    from avo.cli._answer_prompt import terminal_answerer
    from avo.cli._output import note
    from avo.cli._progress import ProgressPrinter
    from avo.cli._run_report import report
    from avo.cli._session_flags import choose_session
    from avo.cli._signals import interrupts
    from avo.compose import compose
    from avo.models import new_id
    from avo.ops.leases import holding_lease, owner_name

    attachments = _attachments(args.attach)  # a bad file fails before anything starts
    config = _resolve(args)
    engine = _engine(config)
    if engine is not None and engine.remote:
        from avo.cli._engine_run import submit_and_follow

        if attachments:
            raise AvoError(
                f"--attach works with runs driven here, not on the {engine.name!r} engine's "
                "workers yet; drop --engine (or [engine]) to attach files"
            )

        return await submit_and_follow(args, task, config, engine)
    quiet = args.quiet or args.json
    streamed: list[str] = []

    def on_text(text: str) -> None:
        streamed.append(text)
        sys.stdout.write(text)
        sys.stdout.flush()

    composition = compose(
        resolved=config,
        stream_callback=None if args.json else on_text,
        workspace=args.workspace,
        answerer=terminal_answerer(),  # a pause for a person asks here, on a terminal
    )
    verbosity = int(getattr(args, "avo_verbose", 0) or 0)
    started = None if quiet else f"avo: run {{run_id}} started (store {composition.store_location})"
    progress = ProgressPrinter(
        verbosity=verbosity, tools=(not quiet and sys.stderr.isatty()), started=started
    )
    composition.manager.register(progress, name="avo-cli-progress")
    run_id = new_id()
    runtime = composition.runtime
    async with composition:
        store = composition.event_store
        session_id = await choose_session(
            args, store, config.config.session.id, composition.store_location
        )
        async with holding_lease(store, run_id, owner=owner_name("avo-run")) as writer:
            runtime.event_store = writer
            with interrupts(runtime.interrupt, run_id=run_id, quiet=args.quiet):
                result = await runtime.run(
                    task,
                    system_prompt=config.config.system_prompt,
                    run_id=run_id,
                    session_id=session_id,
                    attachments=attachments,
                )
        if streamed and not streamed[-1].endswith("\n"):
            print()
        elif not streamed and result.output and not args.json:
            print(result.output)
        if session_id is not None and not quiet and (args.session or args.continue_session):
            note(f"avo: session {session_id} (continue it with: avo run --continue)", args=args)
        return await report(args, result, store, composition.store_location, progress.failures)


def _engine(config: Any) -> Any:
    """The configured engine (None: none configured, the run is driven here)."""
    table = config.config.engine
    if table is None:
        return None
    from avo.engines import open_engine

    return open_engine(
        table.name,
        settings=table.settings,
        environ=config.environ,
        source=config.source("engine.name"),
    )


def run(args: argparse.Namespace) -> int:
    """Run the task; 0 completed, 1 stopped or failed, 3 waiting for a person, 130 interrupted."""
    task = read_task(args.task)
    return asyncio.run(_drive(args, task))


__all__ = ["configure", "read_task", "run"]
