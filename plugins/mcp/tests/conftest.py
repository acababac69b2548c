"""Fixtures for the avo-mcp tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent


def _assert_reaped(pid: int | None) -> None:
    """The child has been waited for: waitpid finds no child, /proc shows no zombie."""
    assert pid is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():  # pid reused by an unrelated process, or still exiting
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
        assert state != "Z", f"process {pid} is a zombie"


@pytest.fixture
def assert_reaped() -> Callable[[int | None], None]:
    return _assert_reaped


@pytest.fixture
def sdk_server_command() -> list[str]:
    """Command line of the SDK-written MCP server (stdio)."""
    return [sys.executable, str(TESTS_DIR / "sdk_server.py")]
