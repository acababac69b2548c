"""CLI startup cost: ``avo --version`` and ``avo plugin list`` vs a bare interpreter.

Each command runs in a fresh process 10 times (after one warm-up run that
fills the OS file cache and writes bytecode); the median wall time is reported
as a ratio to ``python -c pass`` measured the same way in the same run.
Run with every shipped plugin installed (``nox -s bench``).

Targets: ``avo --version`` < 3x and ``avo plugin list`` < 6x.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 10
TARGETS: dict[str, float | None] = {
    "avo --version": 3.0,
    "avo plugin list": 6.0,
    # every plugin imported and checked (status cache bypassed): reported, no target
    "avo plugin list --refresh": None,
}


def _avo() -> list[str]:
    script = Path(sys.executable).parent / "avo"
    if script.exists():
        return [str(script)]
    found = shutil.which("avo")
    return [found] if found else [sys.executable, "-m", "avo.cli"]


def _median_seconds(command: list[str], env: dict[str, str]) -> float:
    subprocess.run(command, env=env, check=True, capture_output=True)  # warm-up
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    avo = _avo()
    baseline = _median_seconds([sys.executable, "-c", "pass"], env)
    plugins = subprocess.run(
        [*avo, "plugin", "list", "--json"], env=env, check=True, capture_output=True, text=True
    ).stdout.count('"name"')
    print(f"python -c pass: {baseline * 1000:.1f} ms (median of {RUNS}); {plugins} plugins")
    print(f"{'command':<26} {'median ms':>10} {'ratio':>7} {'target':>7}")
    failed = False
    for label, target in TARGETS.items():
        seconds = _median_seconds([*avo, *label.split()[1:]], env)
        ratio = seconds / baseline
        if target is None:
            shown, verdict = "-", ""
        else:
            shown, verdict = f"{target:.1f}x", "ok" if ratio < target else "OVER"
            failed |= ratio >= target
        print(f"{label:<26} {seconds * 1000:>10.1f} {ratio:>6.2f}x {shown:>7} {verdict}")
    return 1 if failed and os.environ.get("AVO_BENCH_STRICT") == "1" else 0


if __name__ == "__main__":
    raise SystemExit(main())
