"""Helpers for tests that drive the ``avo`` CLI: as a subprocess, or on a real pseudo-terminal."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def avo(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AVO_", "XDG_"))}
    env.update({"HOME": str(cwd / "home"), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
    return subprocess.run(
        [sys.executable, "-m", "avo.cli", *args],
        cwd=cwd,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


class Terminal:
    """``avo ARGS`` on a real pseudo-terminal (stdin is a TTY: the run asks there)."""

    def __init__(self, cwd: Path, *args: str) -> None:
        import pty

        env = {k: v for k, v in os.environ.items() if not k.startswith(("AVO_", "XDG_"))}
        env.update({"HOME": str(cwd / "home"), "NO_COLOR": "1", "TERM": "dumb"})
        argv = [sys.executable, "-m", "avo.cli", *args]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become avo
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.seen = ""

    def read_until(self, text: str, timeout: float = 120) -> str:
        import select

        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; the terminal showed:\n{self.seen}"
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                assert chunk or text in self.seen, f"exited before {text!r}:\n{self.seen}"
                self.seen += chunk.decode("utf-8", "replace")
        return self.seen

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def finish(self, timeout: float = 120) -> int:
        import contextlib
        import select

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                with contextlib.suppress(OSError):
                    self.seen += os.read(self.fd, 4096).decode("utf-8", "replace")
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, 9)
        raise AssertionError(f"avo did not exit; the terminal showed:\n{self.seen}")

    def kill(self) -> None:
        import signal

        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
