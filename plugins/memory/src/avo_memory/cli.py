"""``avo memory list | search QUERY | forget ID...``: look through and prune long-term memory.

The store is the one ``[memory]`` in avo.toml configures (the default SQLite
store when there is no ``[memory]`` table), for the current workspace's scope
unless ``--scope`` says otherwise. Data goes to stdout (``--json`` for JSON),
notes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from avo.exceptions import AvoError, ConfigError
from avo_memory.records import short_ids

_WIDTH = 100


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``avo memory`` subcommands."""
    parser.add_argument("--config", "-c", default=None, metavar="FILE", help="avo.toml to use")
    parser.add_argument(
        "--scope",
        choices=("workspace", "user"),
        default=None,
        help="whose memories: this workspace's or the user's (default: [memory] scope)",
    )
    sub = parser.add_subparsers(dest="memory_command", metavar="{list,search,forget}")
    listing = sub.add_parser("list", help="memories, most recently written first")
    listing.add_argument("--limit", type=int, default=50, help="how many (default 50)")
    listing.add_argument("--offset", type=int, default=0, help="skip this many first")
    listing.add_argument("--json", action="store_true", help="print JSON")
    search = sub.add_parser("search", help="the memories a run would recall for QUERY")
    search.add_argument("query", help="what to look for")
    search.add_argument("-k", type=int, default=5, help="how many (default 5)")
    search.add_argument("--json", action="store_true", help="print JSON")
    forget = sub.add_parser("forget", help="delete memories by id (or a unique id prefix)")
    forget.add_argument("ids", nargs="*", metavar="ID", help="memory ids from avo memory list")
    forget.add_argument("--all", action="store_true", help="delete every memory of the scope")
    forget.add_argument("--yes", action="store_true", help="confirm --all")


def _line(record: Any, shown_id: str) -> str:
    tags = getattr(record, "tags", ())
    label = f" [{', '.join(tags)}]" if tags else ""
    text = " ".join(str(record.content).split())
    head = f"{shown_id}  {getattr(record, 'updated', '')}{label}  "
    room = max(_WIDTH - len(head), 20)
    return head + (text if len(text) <= room else text[: room - 1] + "…")


def _as_json(record: Any) -> Any:
    as_json = getattr(record, "as_json", None)
    if callable(as_json):
        return as_json()
    return {"memory_id": record.memory_id, "content": record.content}


def _open(args: argparse.Namespace) -> Any:
    from avo.compose import memory_from_config, resolve_config

    environ = getattr(args, "avo_environ", None) or os.environ
    resolved = resolve_config(args.config, environ=environ)
    memory = resolved.config.memory
    if memory is not None and not memory.enabled:
        raise ConfigError(
            f"{resolved.source('memory')}: [memory] is disabled (enabled = false); enable it "
            "to manage memories",
            key="memory.enabled",
        )
    store = memory_from_config(
        resolved, manager=getattr(args, "avo_plugins", None), scope=args.scope, default=True
    )
    for method in ("list_memories", "forget", "recall"):
        if not callable(getattr(store, method, None)):
            raise ConfigError(
                f"memory plugin {type(store).__name__} has no {method}(); avo memory needs a "
                "store that can list and forget (avo.memory.ManagedMemory)",
                key="memory.provider",
            )
    return store


async def _run(args: argparse.Namespace, out: Any) -> int:
    store = _open(args)
    try:
        command = args.memory_command
        if command == "list":
            records = await store.list_memories(limit=args.limit, offset=args.offset)
            return _print(records, args.json, out, "no memories in this scope yet")
        if command == "search":
            records = await store.recall(args.query, k=args.k)
            return _print(records, args.json, out, f"no memory matches {args.query!r}")
        if command == "forget":
            return await _forget(store, args, out)
        raise ConfigError("avo memory needs a subcommand: list, search or forget")
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            await close()


def _print(records: Sequence[Any], as_json: bool, out: Any, empty: str) -> int:
    if as_json:
        out.write(json.dumps([_as_json(r) for r in records], indent=2) + "\n")
        return 0
    if not records:
        print(f"avo: {empty}", file=sys.stderr)
        return 0
    # Short ids, like git's: unique among those listed (--json prints them whole).
    shown = short_ids([record.memory_id for record in records])
    for record in records:
        out.write(_line(record, shown[record.memory_id]) + "\n")
    return 0


async def _forget(store: Any, args: argparse.Namespace, out: Any) -> int:
    if args.all:
        if args.ids:
            raise ConfigError("avo memory forget: give ids or --all, not both")
        if not args.yes:
            raise ConfigError(
                "avo memory forget --all deletes every memory of the scope; add --yes"
            )
        ids: list[str] = []
        while batch := await store.list_memories(limit=500, offset=len(ids)):
            ids += [r.memory_id for r in batch]
    else:
        ids = list(args.ids)
        if not ids:
            raise ConfigError("avo memory forget: give the ids to forget (avo memory list)")
    removed = await store.forget(ids) if ids else 0
    out.write(f"forgot {removed} memor{'y' if removed == 1 else 'ies'}\n")
    return 0


def run(args: argparse.Namespace, *, stdout: Any = None) -> int:
    """Run ``avo memory``; 0 on success (errors are AvoErrors the CLI prints)."""
    return asyncio.run(_run(args, stdout or sys.stdout))


def main(argv: Sequence[str] | None = None) -> int:
    """``avo memory`` as a standalone entry point."""
    parser = argparse.ArgumentParser(prog="avo memory", description=__doc__)
    configure(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        return run(args)
    except AvoError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        return 2


__all__ = ["configure", "main", "run"]
