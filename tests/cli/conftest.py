"""Fixtures of the CLI test suite; the helpers live in ``cli_kit`` (on sys.path from here)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cli_kit import CLI, STORES


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[CLI]:
    """A user with an empty home directory, in an empty workspace."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    yield CLI(cwd=work, home=home)
    STORES.extend(sorted(work.rglob("*.db")))
