"""docs/hooks.md is generated from the hookspec docstrings and must not drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen_hook_docs.py"


@pytest.mark.skipif(not SCRIPT.exists(), reason="runs from the repository checkout only")
def test_hook_reference_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
