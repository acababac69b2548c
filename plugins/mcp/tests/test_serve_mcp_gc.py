"""``avo serve-mcp`` tunes its process's garbage collector (avo.gc_tuning) once started.

Observed in a real subprocess of the command: as it exits (stdin closed) it
writes the collector's thresholds and frozen-object count; no timing.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

AVO_WITH_GC_REPORT = """
import atexit, gc, os, runpy, sys

def report():
    with open(os.environ["GC_PROBE_REPORT"], "w") as out:
        out.write(repr((gc.get_threshold(), gc.get_freeze_count())))

atexit.register(report)
sys.argv = ["avo", *sys.argv[1:]]
runpy.run_module("avo.cli", run_name="__main__")
"""


def _serve_mcp_gc(tmp_path: Path, setting: str | None) -> tuple[tuple[int, int, int], int]:
    report = tmp_path / "gc-report.txt"
    env = dict(os.environ, GC_PROBE_REPORT=str(report), AVO_CONFIG_DIR=str(tmp_path / "home"))
    env.pop("AVO_SERVER_GC", None)
    if setting is not None:
        env["AVO_SERVER_GC"] = setting
    done = subprocess.run(
        [sys.executable, "-c", AVO_WITH_GC_REPORT, "serve-mcp", "--workspace-root", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,  # end of input: the stdio server stops
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    thresholds, frozen = ast.literal_eval(report.read_text())
    return tuple(thresholds), frozen


def test_serve_mcp_freezes_its_start_up_heap_and_raises_the_thresholds(tmp_path: Path) -> None:
    thresholds, frozen = _serve_mcp_gc(tmp_path, None)
    assert thresholds == (10_000, 50, 100)
    assert frozen > 10_000


def test_serve_mcp_leaves_the_collector_be_when_turned_off(tmp_path: Path) -> None:
    assert _serve_mcp_gc(tmp_path, "off") == ((700, 10, 10), 0)
