"""``avo ui`` tunes its process's garbage collector (avo.gc_tuning) once it listens.

Observed in a real subprocess of the command: started on a free port, stopped
with SIGINT (Ctrl-C) or SIGTERM (a service manager's stop) after it printed its
link; as it exits normally it writes the collector's thresholds and frozen-object
count (an atexit handler: a process killed by the signal writes nothing). No timing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from avo.testing.gc_probe import probe_command, probe_environment, read_probe


def _ui_gc(
    tmp_path: Path, setting: str | None, stop: signal.Signals = signal.SIGINT
) -> tuple[tuple[int, int, int], int]:
    env, report = probe_environment(tmp_path, setting)
    process = subprocess.Popen(
        probe_command("ui", "--port", "0"),
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
        process.send_signal(stop)  # avo ui stops, closes its store and exits 0
        assert process.wait(30) == 0, process.stderr.read()  # type: ignore[union-attr]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    return read_probe(report)


def test_avo_ui_freezes_its_start_up_heap_and_raises_the_thresholds(tmp_path: Path) -> None:
    thresholds, frozen = _ui_gc(tmp_path, None)
    assert thresholds == (10_000, 50, 100)
    assert frozen > 10_000


def test_avo_ui_stops_on_sigterm_as_on_ctrl_c(tmp_path: Path) -> None:
    # exit 0 and the report written: the process ended normally, not killed by the signal
    assert _ui_gc(tmp_path, None, stop=signal.SIGTERM)[0] == (10_000, 50, 100)


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
