"""``avo run TASK``: compose a runtime from avo.toml + flags, stream the answer, summarise."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo run``'s arguments."""
    parser.add_argument("task", metavar="TASK", help="what the agent should do")
    parser.add_argument(
        "--config",
        "-c",
        type=Path,
        default=None,
        metavar="FILE",
        help="avo.toml or pyproject.toml with [tool.avo] (default: ./avo.toml if present)",
    )
    parser.add_argument(
        "--provider", metavar="NAME", help="provider plugin name (overrides [provider] name)"
    )
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
        type=Path,
        default=None,
        metavar="PATH",
        help="event store location (default: [store] location, AVO_DATABASE_PATH, avo.db)",
    )
    parser.add_argument(
        "--system-prompt", default=None, metavar="TEXT", help="system prompt sent before the task"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="do not stream the answer")


async def _run(args: argparse.Namespace, environ: Mapping[str, str] | None) -> int:
    from avo.compose import compose

    streamed: list[str] = []

    def on_text(text: str) -> None:
        streamed.append(text)
        if not args.quiet:
            sys.stdout.write(text)
            sys.stdout.flush()

    composition = compose(
        args.config,
        environ=environ,
        # compose builds its own manager so the config's [plugins] switches apply
        provider=args.provider,
        store=args.store,
        database=args.database,
        tools=args.tools,
        stream_callback=on_text,
        discover_config=args.config is None,
    )
    async with composition:
        prompt = args.system_prompt or composition.config.system_prompt
        result = await composition.runtime.run(args.task, system_prompt=prompt)
    if streamed and not args.quiet:
        print()
    elif result.output and not args.quiet:
        print(result.output)
    _summary(result, composition.store_location)
    return 0 if result.status.value == "completed" else 1


def _summary(result: Any, location: str) -> None:
    usage = result.token_usage
    tokens = f"{usage.total_tokens} (input {usage.input_tokens}, output {usage.output_tokens})"
    if not result.token_accounting_available:
        tokens += " (accounting unavailable)"
    stop = result.stop_reason.value if result.stop_reason else "-"
    print(f"run id:      {result.run_id}")
    print(f"status:      {result.status.value}")
    print(f"stop reason: {stop}")
    print(f"steps:       {result.steps}")
    print(f"tokens:      {tokens}")
    print(f"store:       {location}")
    if result.error:
        print(f"error:       {result.error}")


def run(args: argparse.Namespace) -> int:
    """Run the task; exit 0 when the run completed, 1 when it stopped or failed."""
    return asyncio.run(_run(args, getattr(args, "avo_environ", None)))


__all__ = ["configure", "run"]
