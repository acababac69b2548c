"""``avo ui`` tunes its process's garbage collector (avo.gc_tuning) once it listens.

Observed in a real subprocess of the command: started on a free port, stopped
with SIGINT (Ctrl-C) after it printed its link; as it exits it writes the collector's
thresholds and frozen-object count. No timing.
"""

from __future__ import annotations

import ast
import os
import signal
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


def _ui_gc(tmp_path: Path, setting: str | None) -> tuple[tuple[int, int, int], int]:
    report = tmp_path / "gc-report.txt"
    env = dict(os.environ, GC_PROBE_REPORT=str(report), AVO_CONFIG_DIR=str(tmp_path / "home"))
    env.pop("AVO_SERVER_GC", None)
    if setting is not None:
        env["AVO_SERVER_GC"] = setting
    process = subprocess.Popen(
        [sys.executable, "-c", AVO_WITH_GC_REPORT, "ui", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("avo ui: http://127.0.0.1:"), (line, process.stderr.read())  # type: ignore[union-attr]
        process.send_signal(signal.SIGINT)  # Ctrl-C: avo ui stops and exits 0
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    thresholds, frozen = ast.literal_eval(report.read_text())
    return tuple(thresholds), frozen


def test_avo_ui_freezes_its_start_up_heap_and_raises_the_thresholds(tmp_path: Path) -> None:
    thresholds, frozen = _ui_gc(tmp_path, None)
    assert thresholds == (10_000, 50, 100)
    assert frozen > 10_000


def test_avo_ui_leaves_the_collector_be_when_turned_off(tmp_path: Path) -> None:
    assert _ui_gc(tmp_path, "0") == ((700, 10, 10), 0)


def test_avo_ui_refuses_a_bad_setting_before_it_starts(tmp_path: Path) -> None:
    env = dict(os.environ, AVO_SERVER_GC="many", AVO_CONFIG_DIR=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-m", "avo.cli", "ui", "--port", "0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "avo ui: AVO_SERVER_GC='many': give off, on, or one to three" in done.stderr
    assert done.stdout == ""
