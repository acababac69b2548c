"""Helpers of avo-chat's tests: where a chat runs (:class:`Place`), a slow tool plugin."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pty_kit import Terminal, environment, write_config


@dataclass
class Place:
    """Where a test's chat runs: its workspace and home, and ways to start avo there."""

    workspace: Path
    home: Path
    terminals: list[Terminal]

    def config(self, body: str) -> Path:
        return write_config(self.workspace, body)

    def env(self, **extra: str) -> dict[str, str]:
        return environment(self.home, **extra)

    def terminal(self, *args: str, **extra: str) -> Terminal:
        term = Terminal(list(args), cwd=self.workspace, env=self.env(**extra))
        self.terminals.append(term)
        return term

    def runs(self) -> list[dict[str, object]]:
        """``avo runs list --json`` in the workspace."""
        import json

        done = subprocess.run(
            [sys.executable, "-m", "avo.cli", "runs", "list", "--json"],
            cwd=self.workspace,
            env=self.env(),
            capture_output=True,
            text=True,
            check=True,
        )
        return list(json.loads(done.stdout))

    def pipe(
        self, *args: str, stdin: str, timeout: float = 60, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "avo.cli", *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.workspace,
            env=self.env(**extra),
            timeout=timeout,
            check=False,
        )


SLOW_TOOL = '''
"""A tool that takes its time (a blocking sleep), so tests can type while it runs."""

import time

from pydantic import BaseModel

from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides


class WaitArgs(BaseModel):
    seconds: float = 1.0


def _wait(args):
    time.sleep(args.seconds)
    return f"waited {args.seconds} s"


def make(settings):
    from avo.tools import FunctionTool

    return FunctionTool(
        name="wait",
        description="Wait a while.",
        arguments_model=WaitArgs,
        function=_wait,
        risk=ToolRisk.INSPECT,
    )


plugin = provides(ToolSpec(name="wait", factory=make, risk=ToolRisk.INSPECT))
'''


SESSION_CONFIG = """
tools = ["read_file", "write_file", "edit_file"]

[provider]
name = "fake"

[provider.settings]

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "notes.md", content = "version one\\n"}}

[[provider.settings.script]]
content = "created notes.md"

[[provider.settings.script]]
tool_call.name = "edit_file"
tool_call.arguments = {path = "notes.md", old_string = "one", new_string = "two"}

[[provider.settings.script]]
content = "changed it"

[[provider.settings.script]]
content = "It says version one."

[[provider.settings.script]]
content = "- notes.md holds version one"

[[provider.settings.script]]
content = "on the branch"

[store]
location = "chat.db"

[permission]
mode = "bypass_permissions"
"""
