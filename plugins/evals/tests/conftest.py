"""Shared helpers: run the real ``avo`` CLI in a subprocess, build throwaway plugins."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "evals" / "suite.toml"


@dataclass
class Avo:
    """``avo`` run as a real process in a scratch directory."""

    cwd: Path
    env: dict[str, str]

    def __call__(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 240
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "avo.cli", *args],
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


@pytest.fixture
def example_suite() -> Path:
    """The offline example suite in examples/evals."""
    return EXAMPLE


@pytest.fixture
def avo(tmp_path: Path) -> Avo:
    """The CLI, run from ``tmp_path`` with a private plugin cache and store."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AVO_", "PYTEST_")) and key != "NO_COLOR"
    }
    env["AVO_PLUGINS_CACHE"] = str(tmp_path / "plugin-cache")
    env["AVO_DATABASE_PATH"] = str(tmp_path / "avo.db")
    return Avo(tmp_path, env)
