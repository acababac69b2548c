"""SIGKILL a process driving 20 concurrent runs on one SQLite store (group commit), then resume.

Each trial is a real child process (``_many_runs_child.py``) killed at a
seeded random point of its progress (after k of the clean run's acknowledged
writes, so a slow start on a loaded machine does not move the kill before the
runs). Then ``avo.testing.store_crash`` checks
that no acknowledged batch was lost, that no tool effect happened twice or
without a durable start, and resumes every run.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from avo.testing.store_crash import acknowledged, check_after_kill, kill_after_acks
from avo_sqlite import SQLiteEventStore

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
RUNS = 20
STEPS = 5
TRIALS = 10
SEED = 20261203


def _start(db: Path, effects: Path, acks: Path, sync: str) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "_many_runs_child.py"),
            str(db),
            str(effects),
            str(acks),
            str(RUNS),
            str(STEPS),
            sync,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    return child


async def _check(db: Path, effects: Path, acks: Path) -> Counter[str]:
    async with SQLiteEventStore(db) as store:
        return await check_after_kill(store, runs=RUNS, steps=STEPS, effects=effects, acks=acks)


@pytest.mark.parametrize("sync", ["NORMAL", "FULL"])
def test_sigkill_with_20_concurrent_runs_loses_no_acknowledged_batch(
    tmp_path: Path, sync: str
) -> None:
    clean = _start(tmp_path / "clean.db", tmp_path / "clean.txt", tmp_path / "clean.acks", sync)
    out, _ = clean.communicate(timeout=120)
    assert clean.returncode == 0 and "done" in out
    total = acknowledged(tmp_path / "clean.acks")

    rng = random.Random(SEED)
    outcomes: Counter[str] = Counter()
    for trial in range(TRIALS):
        db, effects, acks = (tmp_path / f"t{trial}{suffix}" for suffix in (".db", ".txt", ".acks"))
        child = _start(db, effects, acks, sync)
        kill_after_acks(child, acks, rng.randint(1, total - 1))
        child.communicate(timeout=60)
        outcomes += asyncio.run(_check(db, effects, acks))
    print(f"crash outcomes over {TRIALS} trials x {RUNS} runs:", dict(outcomes))
    assert outcomes["resumed"] + outcomes["refused"] >= RUNS, outcomes
