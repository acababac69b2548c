"""Repository-wide pytest options.

Tests marked ``live`` need something that does not run on these machines (a
Docker engine, a real provider API); they are skipped unless ``--run-live`` is
given.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-live",
        action="store_true",
        default=False,
        help="run tests marked live (they need a Docker engine or a real provider API)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-live"):
        return
    skip = pytest.mark.skip(reason="live test: needs a real external service; pass --run-live")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)
