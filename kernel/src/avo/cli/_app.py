"""Build the ``avo`` parser from command plugins and dispatch to one of them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from avo.exceptions import AvoError, PluginError

_GLOBAL_WITH_VALUE = {"-d", "--database"}


def _invoked_command(argv: Sequence[str]) -> str | None:
    """The first positional word of ``argv`` (skipping global options)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in _GLOBAL_WITH_VALUE:
            skip = True
            continue
        if word == "--":
            return None
        if word.startswith("-"):
            continue
        return word
    return None


def build_parser(
    manager: Any, invoked: str | None, *, describe_all: bool = False
) -> tuple[argparse.ArgumentParser, dict[str, Any]]:
    """The top-level parser; only ``invoked`` (or all, for help) is configured.

    Returns the parser and the loaded command specs by name.
    """
    parser = argparse.ArgumentParser(
        prog="avo",
        description="avo: an event-sourced agent runtime built as a plugin-based microkernel.",
    )
    parser.add_argument("--version", "-V", action="store_true", help="print the version and exit")
    parser.add_argument(
        "-d",
        "--database",
        dest="avo_global_database",
        type=Path,
        default=None,
        metavar="PATH",
        help="event store location for commands that use one (default: avo.db)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    specs: dict[str, Any] = {}
    for name in manager.names("command"):
        if name == invoked or describe_all:
            try:
                spec = manager.get("command", name)
            except AvoError:
                if name == invoked:
                    raise
                subparsers.add_parser(name, help="(broken: see `avo plugin list`)")
                continue
            sub = subparsers.add_parser(name, help=spec.help, description=spec.help)
            if name == invoked:
                try:
                    spec.configure(sub)
                except Exception as exc:
                    raise PluginError(
                        f"command {name!r} failed to configure its arguments: "
                        f"{type(exc).__name__}: {exc}",
                        plugin=name,
                    ) from exc
            specs[name] = spec
        else:
            subparsers.add_parser(name, add_help=False)
    return parser, specs


def run_cli(argv: Sequence[str], *, environ: Mapping[str, str] | None = None) -> int:
    """Parse ``argv``, run the chosen command, map avo errors to exit code 2."""
    env = environ if environ is not None else os.environ
    try:
        from avo.plugins.manager import PluginManager

        manager = PluginManager(environ=env)
        invoked = _invoked_command(argv)
        known = manager.names("command")
        if invoked is not None and invoked not in known:
            problem = next(
                (p for p in manager.problems if p.kind == "command" and p.name == invoked), None
            )
            if problem is not None:
                raise AvoError(str(problem))
            manager.get("command", invoked)  # raises with the reason it is unavailable
        parser, specs = build_parser(manager, invoked, describe_all=invoked is None)
        args = parser.parse_args(list(argv))
        if args.version:
            from avo.cli import _version

            print(f"avo {_version()}")
            return 0
        if args.command is None:
            parser.print_help()
            return 2
        if args.avo_global_database is not None:
            args.database = args.avo_global_database
        args.avo_environ = env
        args.avo_plugins = manager
        return int(specs[args.command].run(args))
    except AvoError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("avo: interrupted", file=sys.stderr)
        return 130


__all__ = ["build_parser", "run_cli"]
