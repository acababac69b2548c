"""Drive ``avo chat`` in a real pseudo-terminal and read the screen a person would see.

pexpect runs the CLI on a pty (it sees a terminal: prompt_toolkit, colours,
raw keys); pyte, a VT100 emulator, turns what it writes into screen lines,
keeping what scrolled off the top. :meth:`Terminal.text` is everything shown
so far, top to bottom, as plain text — what the docs' captures are made of.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pexpect
import pyte

ROWS, COLS = 40, 100
CPR_REQUEST = b"\x1b[6n"

SCRIPT_HEADER = """
[store]
location = "chat.db"
"""


def write_config(workspace: Path, body: str) -> Path:
    """Write ``avo.toml`` into ``workspace``."""
    path = workspace / "avo.toml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def environment(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no AVO_ variables from outside, a private home and state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AVO_", "NO_COLOR"))}
    env.update(
        {
            "HOME": str(home),
            "XDG_STATE_HOME": str(home / ".state"),
            "AVO_PLUGINS_CACHE": "0",
            "TERM": "xterm-256color",
            "COLUMNS": str(COLS),
            "LINES": str(ROWS),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


class Terminal:
    """One ``avo`` process on a pseudo-terminal, and its screen."""

    def __init__(
        self,
        args: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        python: str | None = None,
        rows: int = ROWS,
        cols: int = COLS,
    ) -> None:
        self.screen = pyte.HistoryScreen(cols, rows, history=5000)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""
        self.child = pexpect.spawn(
            python or sys.executable,
            ["-m", "avo.cli", *args],
            cwd=str(cwd),
            env=dict(env),
            dimensions=(rows, cols),
        )

    # -- reading --------------------------------------------------------------------

    def pump(self, seconds: float = 0.05) -> bool:
        """Read what the program wrote (up to ``seconds``); False once it ended."""
        try:
            data = self.child.read_nonblocking(65536, timeout=seconds)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw += data
        self.stream.feed(data.replace(CPR_REQUEST, b""))
        if CPR_REQUEST in data:  # answer "where is the cursor?" as a terminal does
            for _ in range(data.count(CPR_REQUEST)):
                cursor = self.screen.cursor
                self.child.send(f"\x1b[{cursor.y + 1};{cursor.x + 1}R")
        return True

    def lines(self) -> list[str]:
        """Every line shown so far (scrolled-off lines first), trailing spaces removed."""
        width = self.screen.columns
        history = [
            "".join(line[x].data for x in range(width)).rstrip() for line in self.screen.history.top
        ]
        return history + [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        """:meth:`lines` as one string, without the blank lines at the end."""
        return "\n".join(self.lines()).rstrip() + "\n"

    def display(self) -> str:
        """The visible screen now."""
        return "\n".join(line.rstrip() for line in self.screen.display).rstrip() + "\n"

    def wait_for(self, text: str, timeout: float = 30.0, *, count: int = 1) -> None:
        """Wait until ``text`` has appeared ``count`` times on the screen (and scrollback)."""
        deadline = time.monotonic() + timeout
        while self.text().count(text) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {text!r} ({count}x); the screen:\n{self.text()}")
            if not self.pump(0.05) and self.text().count(text) < count:
                raise AssertionError(f"avo ended before {text!r}; the screen:\n{self.text()}")

    def wait_until(self, predicate: Any, timeout: float = 30.0, what: str = "") -> None:
        """Wait until ``predicate(self)`` is true."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{self.text()}")
            self.pump(0.05)

    def settle(self, seconds: float = 0.3) -> None:
        """Read for ``seconds`` (let the screen catch up)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.pump(0.05)

    # -- typing ---------------------------------------------------------------------

    def type(self, text: str) -> None:
        """Type ``text`` (no Enter)."""
        self.child.send(text)

    def enter(self, text: str = "") -> None:
        """Type ``text`` and press Enter."""
        if text:
            self.child.send(text)
            self.settle(0.05)
        self.child.send("\r")

    def ctrl(self, key: str) -> None:
        """Press Ctrl-``key``."""
        self.child.sendcontrol(key)

    def wait_exit(self, timeout: float = 30.0) -> int:
        """Wait for the process to end; its exit status."""
        deadline = time.monotonic() + timeout
        while self.child.isalive():
            if time.monotonic() > deadline:
                self.child.terminate(force=True)
                raise AssertionError(f"avo did not exit; the screen:\n{self.text()}")
            self.pump(0.05)
        while self.pump(0.01):
            pass
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def close(self) -> None:
        """Kill the process if it still runs."""
        if self.child.isalive():
            self.child.terminate(force=True)


__all__ = ["COLS", "ROWS", "Terminal", "environment", "write_config"]
