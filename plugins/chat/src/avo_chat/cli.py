"""``avo chat`` and ``avo resume [SESSION]``: the commands, their flags, and the pipe loop.

On a terminal (stdin and stdout both TTYs) the chat is the prompt_toolkit
front end (:mod:`avo_chat.tty`); otherwise it reads lines from stdin and
writes plain text (:mod:`avo_chat.plain`). Exit status: 0, 1 when a turn or a
command failed (pipes), 130 after a second Ctrl-C, 2 for bad input.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

from avo.exceptions import AvoError, ConfigError
from avo_chat.chat import Chat, ChatOptions


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", default=None, metavar="FILE", help="avo.toml to use")
    parser.add_argument("-d", "--database", default=None, metavar="LOCATION", help="event store")
    parser.add_argument("--provider", metavar="NAME", help="provider for this chat")
    parser.add_argument("--model", metavar="MODEL", help="model for this chat")
    parser.add_argument("--permission-mode", metavar="MODE", help="permission mode plugin")
    parser.add_argument(
        "--workspace", metavar="DIR", default=None, help="the workspace (default: the current dir)"
    )
    parser.add_argument(
        "--plain", action="store_true", help="plain line-by-line mode even on a terminal"
    )


def configure_chat(parser: argparse.ArgumentParser) -> None:
    """``avo chat`` flags."""
    _common(parser)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--session", metavar="ID", help="open session ID (a new ID starts it)")
    group.add_argument(
        "--continue",
        dest="continue_session",
        action="store_true",
        help="continue the most recent session in this store",
    )


def configure_resume(parser: argparse.ArgumentParser) -> None:
    """``avo resume`` flags."""
    parser.add_argument(
        "session", nargs="?", metavar="SESSION", help="session id or prefix (default: the latest)"
    )
    _common(parser)


def _options(args: Any, *, session: str | None, latest: bool) -> ChatOptions:
    workspace = Path(args.workspace).expanduser() if args.workspace else Path.cwd()
    if not workspace.is_dir():
        raise ConfigError(
            f"--workspace {args.workspace}: not a directory; give the folder the agent works in",
            key="workspace",
        )
    return ChatOptions(
        workspace=workspace,
        environ=getattr(args, "avo_environ", None) or os.environ,
        config=args.config,
        database=args.database,
        provider=args.provider,
        model=args.model,
        permission_mode=args.permission_mode,
        session=session,
        latest=latest,
    )


def _interactive(args: Any) -> bool:
    if args.plain:
        return False
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _offer_setup(args: Any, options: ChatOptions) -> None:
    from avo.cli.setup import offer_setup
    from avo.compose.resolve import resolve_config

    config = resolve_config(
        options.config, environ=options.environ, cwd=options.workspace, provider=options.provider
    )
    if not config.configured:
        offer_setup(args)


def _start(args: Any, *, session: str | None, latest: bool) -> int:
    options = _options(args, session=session, latest=latest)
    if _interactive(args):
        _offer_setup(args, options)
        from avo_chat.tty import run_tty

        return run_tty(options)
    return run_plain(options)


def run_chat(args: Any) -> int:
    """``avo chat``."""
    return _start(args, session=args.session, latest=args.continue_session)


def run_resume(args: Any) -> int:
    """``avo resume [SESSION]``."""
    return _start(args, session=args.session, latest=True)


# -- pipes ------------------------------------------------------------------------------


def run_plain(options: ChatOptions) -> int:
    """Read entries from stdin until it ends; answers on stdout."""
    from avo_chat.dispatch import handle
    from avo_chat.driver import Driver
    from avo_chat.plain import LineReader, PlainScreen

    reader = LineReader(sys.stdin)
    screen = PlainScreen(reader)
    chat = Chat(options, screen)
    driver = Driver().start()
    hits = {"count": 0}

    def interrupted(signum: int, frame: Any) -> None:
        hits["count"] += 1
        if hits["count"] > 1 or not chat.busy:
            sys.stderr.write("\navo: leaving the chat\n")
            sys.stderr.flush()
            os._exit(130)
        sys.stderr.write("\navo: interrupting the turn (Ctrl-C again quits)\n")
        sys.stderr.flush()
        driver.call_soon(chat.interrupt)

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        driver.run(chat.open())
        while not chat.quitting:
            line = reader.get()
            if line is None:
                break
            hits["count"] = 0
            driver.run(handle(chat, line))
    except AvoError:
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
        try:
            driver.run(chat.close())
        finally:
            driver.stop()
    return 1 if screen.errors else 0


__all__ = ["configure_chat", "configure_resume", "run_chat", "run_plain", "run_resume"]
