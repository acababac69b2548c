"""Fixtures for avo-chat's tests: a workspace with an avo.toml, a private home, the CLI."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from chat_kit import SLOW_TOOL, Place


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
