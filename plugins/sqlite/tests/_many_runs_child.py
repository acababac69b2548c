"""Crash-trial child: N concurrent runs on one SQLiteEventStore until SIGKILLed.

Usage: python _many_runs_child.py DB EFFECTS ACKS RUNS STEPS [SYNCHRONOUS]
Prints ``ready`` once imported and the store is open, then drives the runs
(see ``avo.testing.store_crash.run_many``) and prints ``done``.
"""

from __future__ import annotations

import asyncio
import sys

from avo.testing.store_crash import run_many
from avo_sqlite import SQLiteEventStore


async def main(db: str, effects: str, acks: str, runs: int, steps: int, sync: str) -> None:
    async with SQLiteEventStore(db, synchronous=sync) as store:
        print("ready", flush=True)
        await run_many(store, runs=runs, steps=steps, effects=effects, acks=acks)
    print("done", flush=True)


if __name__ == "__main__":
    db, effects, acks, runs, steps = sys.argv[1:6]
    sync = sys.argv[6] if len(sys.argv) > 6 else "NORMAL"
    asyncio.run(main(db, effects, acks, int(runs), int(steps), sync))
