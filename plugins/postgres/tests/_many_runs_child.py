"""Crash-trial child: N concurrent runs on one PostgresEventStore until SIGKILLed.

Usage: python _many_runs_child.py DSN SCHEMA EFFECTS ACKS RUNS STEPS
Prints ``ready`` once the store is connected, then drives the runs (see
``avo.testing.store_crash.run_many``) and prints ``done``.
"""

from __future__ import annotations

import asyncio
import sys

from avo.testing.store_crash import run_many
from avo_postgres import PostgresEventStore


async def main(dsn: str, schema: str, effects: str, acks: str, runs: int, steps: int) -> None:
    async with PostgresEventStore(dsn, schema=schema) as store:
        print("ready", flush=True)
        await run_many(store, runs=runs, steps=steps, effects=effects, acks=acks)
    print("done", flush=True)


if __name__ == "__main__":
    dsn, schema, effects, acks, runs, steps = sys.argv[1:7]
    asyncio.run(main(dsn, schema, effects, acks, int(runs), int(steps)))
