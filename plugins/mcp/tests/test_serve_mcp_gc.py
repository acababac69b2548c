"""``avo serve-mcp`` tunes its process's garbage collector (avo.gc_tuning) once started.

Observed in a real subprocess of the command: as it exits (stdin closed) it
writes the collector's thresholds and frozen-object count; no timing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from avo.testing.gc_probe import probe_command, probe_environment, read_probe


def _serve_mcp_gc(tmp_path: Path, setting: str | None) -> tuple[tuple[int, int, int], int]:
    env, report = probe_environment(tmp_path, setting)
    done = subprocess.run(
        probe_command("serve-mcp", "--workspace-root", str(tmp_path)),
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,  # end of input: the stdio server stops
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return read_probe(report)


def test_serve_mcp_freezes_its_start_up_heap_and_raises_the_thresholds(tmp_path: Path) -> None:
    thresholds, frozen = _serve_mcp_gc(tmp_path, None)
    assert thresholds == (10_000, 50, 100)
    assert frozen > 10_000


def test_serve_mcp_leaves_the_collector_be_when_turned_off(tmp_path: Path) -> None:
    assert _serve_mcp_gc(tmp_path, "off") == ((700, 10, 10), 0)
