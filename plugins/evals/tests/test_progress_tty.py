"""The progress bar on a real terminal (a pseudo-terminal): redrawn in place on stderr."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SUITE = """
trials = 3
concurrency = 1
[[cases]]
name = "answers"
task = "say done"
checks = [{ answer_contains = "done" }]
[cases.config.provider]
name = "fake"
settings = { script = [{ content = "done" }] }
"""


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_progress_is_a_redrawn_bar_on_a_terminal(avo: Any, tmp_path: Path) -> None:
    (tmp_path / "suite.toml").write_text(SUITE)
    master, slave = os.openpty()
    env = {**avo.env, "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "avo.cli", "eval", "suite.toml"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    screen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        screen += chunk
    out, _ = process.communicate(timeout=120)
    os.close(master)
    assert process.returncode == 0, out
    text = screen.decode()
    assert "\r\x1b[2K[########--------" in text  # redrawn in place: 1 of 3
    assert "] 3/3 trials" in text and "answers #3 \x1b[32mpass\x1b[0m" in text
    assert "eval: " not in text  # not the plain per-trial lines
    assert b"3/3" in out and b"\x1b[" not in out  # the table on stdout stays plain
