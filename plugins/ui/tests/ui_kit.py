"""Helpers of avo-ui's tests: a workspace, `avo` subprocesses, a served UI, Chromium.

The UI is the real ``avo ui`` command in a subprocess on 127.0.0.1 (port 0);
runs are made by the real ``avo run`` with the fake provider's scripts and
the real tools; pages are driven by Playwright in Debian's Chromium
(/usr/bin/chromium, installed by scripts/ensure-services.sh; nothing is
downloaded at run time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("AVO_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

STEPS = """
[[provider.settings.script]]
tool_call = {name = "run_shell", arguments = {command = "sleep 2.5; echo measured"}}
usage = {input_tokens = 820, output_tokens = 41}

[[provider.settings.script]]
tool_call = {name = "read_file", arguments = {path = "notes.md"}}
usage = {input_tokens = 905, output_tokens = 38}

[[provider.settings.script]]
tool_call = {name = "run_shell", arguments = {command = "sleep 1.5; wc -l notes.md"}}
usage = {input_tokens = 990, output_tokens = 35}

[[provider.settings.script]]
tool_call.name = "write_file"
tool_call.arguments = {path = "notes.md", content = "alpha\\nBETA\\ngamma\\n"}
usage = {input_tokens = 1110, output_tokens = 64}

[[provider.settings.script]]
content = '''Updated **notes.md**: `beta` is now `BETA`.

- one line changed
- nothing else touched'''
usage = {input_tokens = 1240, output_tokens = 52}
"""

ASKING = f"""
tools = ["read_file", "write_file", "run_shell"]

[permission]
allow = ["run_shell"]

[provider]
name = "fake"
{STEPS}
[pricing."fake/fake"]
input = 3.0
output = 15.0

[store]
location = "runs.db"
"""
"""The workspace's avo.toml: two slow shell steps, a read, then an edit that asks."""

QUICK = """
tools = ["read_file", "write_file"]

[permission]
mode = "accept_edits"

[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {name = "read_file", arguments = {path = "notes.md"}}
usage = {input_tokens = 700, output_tokens = 30}

[[provider.settings.script]]
tool_call.name = "write_file"
tool_call.arguments = {path = "notes.md", content = "alpha\\nBeta\\ngamma\\n"}
usage = {input_tokens = 760, output_tokens = 58}

[[provider.settings.script]]
content = "Done: *Beta* capitalised."
usage = {input_tokens = 810, output_tokens = 20}

[store]
location = "runs.db"
"""
"""Another config: the edit is allowed (accept_edits), so the run finishes at once."""


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    env.update(
        {
            "HOME": str(home),
            "XDG_STATE_HOME": str(home / ".state"),
            "AVO_PLUGINS_CACHE": "0",
            "PYTHONUNBUFFERED": "1",
            "NO_COLOR": "1",
        }
    )
    env.update(extra)
    return env


class Workspace:
    """A folder with an avo.toml and a notes file, and ways to run ``avo`` there."""

    def __init__(self, root: Path) -> None:
        self.root = root / "work"
        self.home = root / "home"
        self.root.mkdir()
        self.home.mkdir()
        (self.root / "avo.toml").write_text(textwrap.dedent(ASKING), encoding="utf-8")
        (self.root / "quick.toml").write_text(textwrap.dedent(QUICK), encoding="utf-8")
        (self.root / "notes.md").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
        self.env = environment(self.home)

    def avo(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "avo.cli", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode not in (0, 3):
            raise AssertionError(f"avo {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
        return done

    def runs(self) -> list[dict[str, Any]]:
        return list(json.loads(self.avo("runs", "list", "--json").stdout))

    def run_by_task(self, task: str) -> dict[str, Any]:
        found = [r for r in self.runs() if r["task"] == task]
        assert len(found) == 1, found
        return found[0]


class Server:
    """``avo ui`` in a subprocess; ``url`` is the link it printed."""

    def __init__(self, workspace: Workspace, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "avo.cli", "ui", "--port", "0", *args],
            cwd=workspace.root,
            env=workspace.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("avo ui: ") or not line:
                break
        if not line.startswith("avo ui: "):
            self.close()
            raise AssertionError(f"avo ui did not start: {line!r} {self.process.stderr.read()}")  # type: ignore[union-attr]
        self.link = line.removeprefix("avo ui: ").strip()
        self.url = self.link.split("?")[0].rstrip("/")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
