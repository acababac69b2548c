"""Build the ``avo`` parser from command plugins and dispatch to one of them.

Global options (before the command): ``-d/--database``, ``-c/--config``,
``-v/--verbose``, ``--json``, ``--no-color`` and ``--debug``. Every command
sees them on its ``args``: ``args.database`` and ``args.config`` (when the
command did not set its own), ``args.json`` (when the command has ``--json``),
``args.avo_verbose``, ``args.avo_color``, ``args.avo_environ`` (the injectable
environment) and ``args.avo_plugins`` (this invocation's plugin manager).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from avo.cli._errors import debug_requested, guarded, one_line, say
from avo.exceptions import AvoError, PluginError

_GLOBAL_WITH_VALUE = {"-d", "--database", "-c", "--config"}


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (``avo run: … (see avo run --help)``)."""

    def error(self, message: str) -> Any:
        """Print one line on stderr and exit 2."""
        sys.stderr.write(f"{self.prog}: {one_line(message)} (see '{self.prog} --help')\n")
        raise SystemExit(2)


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


def _add_globals(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", "-V", action="store_true", help="print the version and exit")
    parser.add_argument(
        "-d",
        "--database",
        dest="avo_global_database",
        default=None,
        metavar="LOCATION",
        help="event store for commands that use one: a file path or a store URL "
        "(default: [store] location, AVO_DATABASE_PATH, avo.db)",
    )
    parser.add_argument(
        "-c",
        "--config",
        dest="avo_global_config",
        default=None,
        metavar="FILE",
        help="avo.toml (or pyproject.toml with [tool.avo]) to use instead of ./avo.toml",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        dest="avo_verbose",
        action="count",
        default=0,
        help="progress on stderr (tool calls, retries); -vv for more",
    )
    parser.add_argument(
        "--json", dest="avo_global_json", action="store_true", help="print data as JSON"
    )
    parser.add_argument(
        "--no-color", dest="avo_no_color", action="store_true", help="plain output (or NO_COLOR=1)"
    )
    parser.add_argument(
        "--debug", dest="avo_debug", action="store_true", help="show tracebacks of errors"
    )


def build_parser(
    manager: Any, invoked: str | None, *, describe_all: bool = False
) -> tuple[argparse.ArgumentParser, dict[str, Any]]:
    """The top-level parser; only ``invoked`` (or all, for help) is configured.

    Returns the parser and the loaded command specs by name.
    """
    parser = Parser(
        prog="avo",
        description="avo: an event-sourced agent runtime built as a plugin-based microkernel.",
    )
    _add_globals(parser)
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


def _warn_shadowed(manager: Any, invoked: str | None) -> None:
    for problem in getattr(manager, "shadowed", ()):
        if problem.kind == "command" and problem.name == invoked:
            say(f"warning: {problem}")


def _apply_globals(args: argparse.Namespace, env: Mapping[str, str], manager: Any) -> None:
    # a command's own -d (after the command) is more specific than the global one
    if getattr(args, "database", None) is None:
        args.database = args.avo_global_database
    if args.avo_global_config is not None and getattr(args, "config", None) is None:
        args.config = args.avo_global_config
    elif not hasattr(args, "config"):
        args.config = None
    if args.avo_global_json and hasattr(args, "json"):
        args.json = True
    no_color = args.avo_no_color or bool(env.get("NO_COLOR"))
    args.avo_color = not no_color
    args.avo_environ = env
    args.avo_plugins = manager


def _on_a_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _interactive_default(specs: Mapping[str, Any], manager: Any) -> str | None:
    """The command a bare ``avo`` runs on a terminal (``CommandSpec.interactive_default``)."""
    if not _on_a_terminal():
        return None
    wanted = sorted(name for name, spec in specs.items() if spec.interactive_default)
    if len(wanted) == 1:
        return wanted[0]
    if wanted:
        named = ", ".join(
            f"{name} ({getattr(manager.registration('command', name), 'package', None) or '?'})"
            for name in wanted
        )
        say(f"several commands start on a bare avo ({named}); run one of them by name")
    return None


def _dispatch(argv: Sequence[str], env: Mapping[str, str]) -> int:
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
    _warn_shadowed(manager, invoked)
    parser, specs = build_parser(manager, invoked, describe_all=invoked is None)
    args = parser.parse_args(list(argv))
    if args.version:
        from avo.cli import _version

        print(f"avo {_version()}")
        return 0
    if args.command is None:
        default = _interactive_default(specs, manager)
        if default is None:
            parser.print_help()
            return 2
        return _dispatch([*argv, default], env)
    _apply_globals(args, env, manager)
    from avo.cli._logging import setup

    setup(int(args.avo_verbose or 0), env)
    return int(specs[args.command].run(args))


def run_cli(argv: Sequence[str], *, environ: Mapping[str, str] | None = None) -> int:
    """Parse ``argv``, run the chosen command; every failure is one line on stderr.

    Exit codes: the command's own; 2 for bad input or a refused operation
    (any :class:`AvoError`); 130 after Ctrl-C; 141 when stdout was closed; 1
    for an internal error (``--debug`` shows its traceback).
    """
    env = environ if environ is not None else os.environ
    words = list(argv)
    return guarded(lambda: _dispatch(words, env), debug=debug_requested(words, env))


__all__ = ["Parser", "build_parser", "run_cli"]
