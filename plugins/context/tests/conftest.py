"""Shared helpers (context_reader.py) for avo-context's tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from context_reader import Reader


@pytest.fixture
def reader() -> Any:
    """Build a Reader: ``reader(total, recall_at=...)``."""
    return Reader
