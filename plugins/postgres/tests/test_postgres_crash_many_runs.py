"""SIGKILL a process driving 20 concurrent runs on one PostgreSQL store, then resume.

Each trial is a real child process (``_many_runs_child.py``) killed at a
seeded random point of its progress (after k acknowledged writes); its runs
share one store (and its group writes). Then ``avo.testing.store_crash``
checks that no acknowledged batch was lost and no tool effect happened twice
or without a durable start, and resumes every run.
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
from avo_postgres import PostgresEventStore

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

HERE = Path(__file__).parent
RUNS = 20
STEPS = 5
TRIALS = 6
SEED = 20261203


def _start(dsn: str, schema: str, effects: Path, acks: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "_many_runs_child.py"),
            dsn,
            schema,
            str(effects),
            str(acks),
            str(RUNS),
            str(STEPS),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    return child


async def _check(dsn: str, schema: str, effects: Path, acks: Path) -> Counter[str]:
    async with PostgresEventStore(dsn, schema=schema) as store:
        return await check_after_kill(store, runs=RUNS, steps=STEPS, effects=effects, acks=acks)


def test_sigkill_with_20_concurrent_runs_loses_no_acknowledged_batch(
    pg_schema: tuple[str, str], tmp_path: Path
) -> None:
    dsn, schema = pg_schema
    clean = _start(dsn, f"{schema}_clean", tmp_path / "clean.txt", tmp_path / "clean.acks")
    out, _ = clean.communicate(timeout=180)
    assert clean.returncode == 0 and "done" in out
    total = acknowledged(tmp_path / "clean.acks")

    rng = random.Random(SEED)
    outcomes: Counter[str] = Counter()
    try:
        for trial in range(TRIALS):
            trial_schema = f"{schema}_{trial}"
            effects, acks = tmp_path / f"t{trial}.txt", tmp_path / f"t{trial}.acks"
            child = _start(dsn, trial_schema, effects, acks)
            kill_after_acks(child, acks, rng.randint(max(1, total // 4), total - 1))
            child.communicate(timeout=60)
            outcomes += asyncio.run(_check(dsn, trial_schema, effects, acks))
    finally:
        asyncio.run(_drop(dsn, [f"{schema}_clean", *(f"{schema}_{t}" for t in range(TRIALS))]))
    print(f"crash outcomes over {TRIALS} trials x {RUNS} runs:", dict(outcomes))
    assert outcomes["resumed"] + outcomes["refused"] >= RUNS, outcomes


async def _drop(dsn: str, schemas: list[str]) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        for name in schemas:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    finally:
        await conn.close()
