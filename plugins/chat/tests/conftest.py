"""Fixtures for avo-chat's tests: a workspace with an avo.toml, a private home, the CLI."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

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


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    workspace = tmp_path / "work"
    home = tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    found = Place(workspace=workspace, home=home, terminals=[])
    yield found
    for term in found.terminals:
        term.close()


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


@pytest.fixture
def slow_tool(tmp_path: Path) -> str:
    """A directory holding an installed-looking ``wait`` tool plugin (put it on PYTHONPATH)."""
    from avo.testing.plugins import write_distribution

    root = tmp_path / "site"
    write_distribution(
        root,
        "avo-test-wait",
        entry_points={"avo.tools": {"wait": "avo_test_wait:plugin"}},
        modules={"avo_test_wait": SLOW_TOOL},
    )
    return str(root)
