"""Workspace commands: /diff /commit /stash /log (git), /shell and !CMD (sandboxed),
/test /lint /grep /find /map /symbols (the tool plugins of those names).

Output of /shell, /test and /lint is offered to your next message (the status
line counts what is attached), so "why does this fail?" right after /test
sends the failure along.
"""

from __future__ import annotations

import asyncio
import shlex
from typing import TYPE_CHECKING, Any

from avo.exceptions import AvoError
from avo_chat.chat import check_not_busy
from avo_chat.screen import output_text

if TYPE_CHECKING:
    from avo_chat.slash import ChatContext

MAX_SHOWN_LINES = 200


async def _git(chat: ChatContext, *args: str, limit: float = 30) -> str:
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=chat.workspace,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise AvoError(
            "git is not installed (it is needed for /diff, /commit, /stash, /log)"
        ) from None
    try:
        out, err = await asyncio.wait_for(process.communicate(), limit)
    except TimeoutError:
        process.kill()
        raise AvoError(f"git {args[0]} took longer than {limit:.0f}s and was stopped") from None
    if process.returncode != 0:
        message = err.decode(errors="replace").strip().splitlines()
        raise AvoError(f"git {args[0]}: {message[-1] if message else 'failed'}")
    return out.decode(errors="replace")


def _show_text(chat: ChatContext, text: str, *, syntax: str | None = None) -> None:
    lines = text.rstrip("\n").splitlines()
    hidden = len(lines) - MAX_SHOWN_LINES
    text = "\n".join(lines[:MAX_SHOWN_LINES])
    if syntax and not chat.plain:
        from rich.syntax import Syntax

        chat.show(Syntax(text, syntax, theme="ansi_dark", background_color="default"))
    else:
        chat.print(text)
    if hidden > 0:
        chat.print(f"… {hidden} more lines", style="dim")


async def diff(chat: ChatContext, argument: str) -> None:
    """Uncommitted changes (tracked files), or of PATH."""
    text = await _git(chat, "diff", "HEAD", "--", *([argument] if argument else []))
    untracked = await _git(chat, "ls-files", "--others", "--exclude-standard")
    if not text.strip() and not untracked.strip():
        chat.print("no changes")
        return
    if text.strip():
        _show_text(chat, text, syntax="diff")
    if untracked.strip() and not argument:
        chat.print("new files: " + ", ".join(untracked.split()), style="dim")


async def commit(chat: ChatContext, argument: str) -> None:
    """Commit every change with MESSAGE (default: the session's title)."""
    check_not_busy(chat.chat, "/commit")
    message = argument
    if not message:
        from avo_chat.sessions import session_store

        record = (
            await session_store(chat.chat).get_session(chat.session_id) if chat.session_id else None
        )
        message = f"avo: {record.title}" if record is not None and record.title else "avo changes"
    await _git(chat, "add", "-A")
    out = await _git(chat, "commit", "-m", message)
    chat.print(out.strip().splitlines()[0] if out.strip() else "committed", style="ok")


async def stash(chat: ChatContext, argument: str) -> None:
    """git stash with ARGS (push by default; pop, list, show...)."""
    check_not_busy(chat.chat, "/stash")
    out = await _git(chat, "stash", *(shlex.split(argument) if argument else ["push"]))
    chat.print(out.strip() or "done")


async def log(chat: ChatContext, argument: str) -> None:
    """The last N commits (10)."""
    count = argument if argument.isdigit() else "10"
    chat.print((await _git(chat, "log", "--oneline", "-n", count)).rstrip() or "no commits")


async def shell(chat: ChatContext, argument: str) -> None:
    """Run CMD in the sandbox; its output goes to your next message."""
    if not argument:
        raise AvoError("/shell needs a command, e.g. /shell ls -la (or !ls -la)")
    result = await chat.shell(argument)
    _show_text(chat, result.output or "(no output)")
    status = f"exit {result.exit_code}"
    chat.attach(f"$ {argument} ({status})", result.output or "(no output)")
    chat.print(f"{status} · output attached to your next message", style="dim")


async def _tool(chat: ChatContext, name: str, arguments: dict[str, Any]) -> Any:
    return await chat.run_tool(name, arguments)


async def test(chat: ChatContext, argument: str) -> None:
    """Run the tests (TARGET: a file or node id); output goes to your next message."""
    output = await _tool(chat, "test_runner", {"target": argument or None})
    text = output_text(output.get("output") if isinstance(output, dict) else output)
    summary = output.get("summary") if isinstance(output, dict) else None
    _show_text(chat, text or "(no output)")
    chat.attach(f"tests {argument or '(all)'}", text or str(output))
    chat.print(f"{summary or 'done'} · output attached to your next message", style="dim")


async def lint(chat: ChatContext, argument: str) -> None:
    """Run the linter on PATH (default: everything); output goes to your next message."""
    output = await _tool(chat, "lint", {"path": argument or None})
    text = output.get("output", "") if isinstance(output, dict) else output_text(output)
    clean = isinstance(output, dict) and output.get("clean")
    _show_text(chat, text or "(no findings)")
    chat.attach(f"lint {argument or '(all)'}", text or "clean")
    chat.print(("clean" if clean else "findings") + " · attached to your next message", style="dim")


async def grep(chat: ChatContext, argument: str) -> None:
    """Lines matching PATTERN (a regular expression), in files matching GLOB."""
    words = shlex.split(argument) if argument else []
    if not words:
        raise AvoError("/grep needs a PATTERN, e.g. /grep 'def main' *.py")
    arguments: dict[str, Any] = {"pattern": words[0]}
    if len(words) > 1:
        arguments["include_glob"] = words[1]
    output = await _tool(chat, "grep", arguments)
    matches = output.get("matches", []) if isinstance(output, dict) else []
    lines = [f"{m['path']}:{m['line']}: {m['text']}" for m in matches if isinstance(m, dict)]
    _show_text(chat, "\n".join(lines) if lines else "no matches")
    if isinstance(output, dict) and output.get("truncated"):
        chat.print("(more matches not shown)", style="dim")


async def find(chat: ChatContext, argument: str) -> None:
    """Files matching GLOB (default: every file)."""
    output = await _tool(chat, "glob", {"pattern": argument or "**/*"})
    matches = output.get("matches", []) if isinstance(output, dict) else []
    _show_text(chat, "\n".join(map(str, matches)) if matches else "no files match")


async def map_(chat: ChatContext, argument: str) -> None:
    """The workspace's files (up to N, default 200) and the recently changed ones."""
    limit = int(argument) if argument.isdigit() else 200
    output = await _tool(chat, "workspace_map", {"max_entries": limit})
    if not isinstance(output, dict):
        chat.print(output_text(output))
        return
    files = [f"{f['path']}  ({f['size']} B)" for f in output.get("files", [])]
    _show_text(chat, "\n".join(files) or "(no files)")
    chat.print(f"{output.get('total_files', len(files))} files", style="dim")
    if output.get("recent"):
        chat.print("recently changed: " + ", ".join(output["recent"][:8]), style="dim")


async def symbols(chat: ChatContext, argument: str) -> None:
    """Functions and classes defined in PATH (a file or folder)."""
    output = await _tool(chat, "symbols", {"path": argument or "."})
    found = output.get("symbols", []) if isinstance(output, dict) else []
    lines = [f"{s['path']}:{s['line']}  {s['kind']} {s['name']}" for s in found]
    _show_text(chat, "\n".join(lines) or "no symbols found")


__all__ = [
    "commit",
    "diff",
    "find",
    "grep",
    "lint",
    "log",
    "map_",
    "shell",
    "stash",
    "symbols",
    "test",
]
