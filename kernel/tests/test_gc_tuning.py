"""avo.gc_tuning: a server process freezes its start-up heap and raises the thresholds.

The tuning changes the whole process's collector, so every test that applies
it runs in a subprocess (the real ``avo worker`` entry point among them) and
reads the collector's state back; nothing here measures time.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from avo.exceptions import ConfigError
from avo.gc_tuning import DEFAULT_THRESHOLDS, ENV_VAR, server_gc_thresholds
from avo.testing.gc_probe import probe_command, probe_environment, read_probe


def gc_after(
    args: list[str], tmp_path: Path, setting: str | None = None
) -> tuple[tuple[int, int, int], int, subprocess.CompletedProcess[str]]:
    """Run ``avo ARGS`` in a subprocess; its collector state at exit, and the process."""
    env, report = probe_environment(tmp_path, setting)
    done = subprocess.run(
        probe_command(*args),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    thresholds, frozen = read_probe(report)
    return thresholds, frozen, done


def test_the_setting_reads_on_off_and_thresholds() -> None:
    assert server_gc_thresholds({}) == DEFAULT_THRESHOLDS == (10_000, 50, 100)
    for on in ("", "on", "1", "TRUE", " yes "):
        assert server_gc_thresholds({ENV_VAR: on}) == DEFAULT_THRESHOLDS
    for off in ("off", "0", "False", "NO"):
        assert server_gc_thresholds({ENV_VAR: off}) is None
    assert server_gc_thresholds({ENV_VAR: "20000, 20, 40"}) == (20_000, 20, 40)
    assert server_gc_thresholds({ENV_VAR: "5000"}) == (5_000, 50, 100)


@pytest.mark.parametrize("bad", ["fast", "1,2,3,4", "-5", "0,10,10", "100,x"])
def test_a_bad_setting_is_refused_naming_it(bad: str) -> None:
    with pytest.raises(ConfigError) as caught:
        server_gc_thresholds({ENV_VAR: bad})
    message = str(caught.value)
    assert f"AVO_SERVER_GC={bad!r}" in message
    assert "give off, on, or one to three collector thresholds" in message
    assert "\n" not in message


def test_the_helper_freezes_the_heap_and_raises_the_thresholds() -> None:
    code = (
        "import gc; from avo.gc_tuning import tune_gc_for_server\n"
        "done = tune_gc_for_server()\n"
        "print(repr((done.previous_thresholds, done.thresholds, done.frozen,"
        " gc.get_threshold(), gc.get_freeze_count())))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    previous, thresholds, frozen, now, frozen_now = ast.literal_eval(out.strip())
    assert (previous, thresholds, now) == ((700, 10, 10), (10_000, 50, 100), (10_000, 50, 100))
    assert frozen == frozen_now > 1_000  # the interpreter's and avo's objects, at least


def test_off_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    code = (
        "import gc; from avo.gc_tuning import tune_gc_for_server\n"
        "print(repr((tune_gc_for_server(), gc.get_threshold(), gc.get_freeze_count())))\n"
    )
    env = dict(os.environ, **{ENV_VAR: "off"})
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert ast.literal_eval(out.strip()) == (None, (700, 10, 10), 0)


def test_avo_worker_tunes_its_process_before_serving(tmp_path: Path) -> None:
    # The in-process engine refuses to serve (it has no workers) after the CLI
    # composed it: the tuning already happened by then.
    thresholds, frozen, done = gc_after(["worker", "--engine", "in-process"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "the in-process engine has no workers" in done.stderr
    assert thresholds == (10_000, 50, 100)
    assert frozen > 10_000

    thresholds, frozen, done = gc_after(
        ["worker", "--engine", "in-process"], tmp_path, setting="30000,20"
    )
    assert (thresholds, done.returncode) == ((30_000, 20, 100), 2)

    thresholds, frozen, done = gc_after(["worker", "--engine", "in-process"], tmp_path, "off")
    assert (thresholds, frozen, done.returncode) == ((700, 10, 10), 0, 2)


def test_avo_worker_refuses_a_bad_setting_in_one_line(tmp_path: Path) -> None:
    thresholds, frozen, done = gc_after(
        ["worker", "--engine", "in-process"], tmp_path, setting="lots"
    )
    assert done.returncode == 2
    assert "AVO_SERVER_GC='lots': give off, on, or one to three collector thresholds" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr
    assert (thresholds, frozen) == ((700, 10, 10), 0)
