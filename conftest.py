"""Repository-wide pytest options.

Tests marked ``live`` need something that does not run on these machines (a
Docker engine, a real provider API); they are skipped unless ``--run-live`` is
given.

Property tests run under one hypothesis profile with no per-example deadline
and without the "input generation is slow" health check: on a shared 2-core
machine under load both fire on timing alone, never on a wrong result.
"""

from __future__ import annotations

import pytest

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # a session without hypothesis runs no property tests
    pass
else:
    settings.register_profile("avo", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("avo")


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
