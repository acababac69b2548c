"""Fixtures of avo-ui's tests: a workspace, a served UI, one Chromium for the session."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ui_kit import CHROMIUM, CHROMIUM_ARGS, Server, Workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
def served(workspace: Workspace) -> Iterator[Server]:
    server = Server(workspace)
    yield server
    server.close()


@pytest.fixture(scope="module")  # Playwright's loop must be gone before async tests run
def chromium() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (headless, fresh profile, no network chatter)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"{CHROMIUM} is missing: run scripts/ensure-services.sh as root (it installs chromium)"
        )
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="avo-ui-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 860},
        )
        yield context
        context.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where the tests save screenshots ($AVO_UI_SCREENSHOTS, else a temp folder)."""
    folder = Path(os.environ.get("AVO_UI_SCREENSHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
