"""Importing avo, the plugin entry points or avo_mcp pulls in no MCP SDK or HTTP stack."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path


def test_imports_stay_cheap() -> None:
    code = (
        "import sys, avo, avo_mcp, avo_mcp.plugin\n"
        "heavy = sorted(m for m in ('mcp', 'httpx', 'anyio', 'avo_mcp.client', 'avo_tools')"
        " if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


def test_entry_points_registered() -> None:
    commands = {ep.name: ep.value for ep in entry_points(group="avo.commands")}
    assert commands["serve-mcp"] == "avo_mcp.plugin:serve_mcp"
    assert commands["mcp"] == "avo_mcp.plugin:mcp"


def test_python_dash_m_entry(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    run = [sys.executable, "-m", "avo_mcp", "mcp", "--config", str(config)]
    added = subprocess.run([*run, "add", "t", "echo", "hi"], capture_output=True, text=True)
    assert added.returncode == 0, added.stderr
    listed = subprocess.run([*run, "list"], capture_output=True, text=True)
    assert "t     echo hi" in listed.stdout
    bad = subprocess.run([*run, "remove", "zzz", "-y"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("avo: no MCP server named 'zzz'")
