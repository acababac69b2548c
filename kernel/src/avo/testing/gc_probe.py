"""Observe a server command's garbage-collector tuning (:mod:`avo.gc_tuning`) from outside.

:func:`probe_command` runs ``python -m avo.cli ARGS`` in a way that, as the
process exits, writes the collector's thresholds and frozen-object count to
a report file; :func:`probe_environment` prepares the environment (with or
without ``AVO_SERVER_GC``) and names that file; :func:`read_probe` reads it.
A test starts the command however it must (run to completion, or stopped
with a signal) and then compares what the process ended with.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

from avo.gc_tuning import ENV_VAR

REPORT_VAR = "GC_PROBE_REPORT"

_PROBE = f"""
import atexit, gc, os, runpy, sys

def report():
    with open(os.environ[{REPORT_VAR!r}], "w") as out:
        out.write(repr((gc.get_threshold(), gc.get_freeze_count())))

atexit.register(report)
sys.argv = ["avo", *sys.argv[1:]]
runpy.run_module("avo.cli", run_name="__main__")
"""


def probe_command(*args: str) -> list[str]:
    """The argv of ``avo ARGS`` that reports its collector state as it exits."""
    return [sys.executable, "-c", _PROBE, *args]


def probe_environment(folder: Path, setting: str | None = None) -> tuple[dict[str, str], Path]:
    """This process's environment for a probed command, and the report file it will write.

    ``setting`` is the ``AVO_SERVER_GC`` value (None: unset, the default tuning);
    ``AVO_ENGINE`` is dropped and avo's config folder is ``folder/home``.
    """
    report = folder / "gc-report.txt"
    env = dict(os.environ, AVO_CONFIG_DIR=str(folder / "home"))
    env[REPORT_VAR] = str(report)
    env.pop(ENV_VAR, None)
    env.pop("AVO_ENGINE", None)
    if setting is not None:
        env[ENV_VAR] = setting
    return env, report


def read_probe(report: Path) -> tuple[tuple[int, int, int], int]:
    """The thresholds and frozen-object count a probed command ended with."""
    thresholds, frozen = ast.literal_eval(report.read_text())
    first, second, third = thresholds
    return (int(first), int(second), int(third)), int(frozen)


__all__ = ["REPORT_VAR", "probe_command", "probe_environment", "read_probe"]
