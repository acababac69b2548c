"""Child process for test_sqlite_processes.py: hammer one shared run, then race to finalize it."""

from __future__ import annotations

import asyncio
import sys

from avo.events import EventType
from avo.exceptions import EventInvariantError, RunAlreadyTerminalError
from avo.testing.stores import event, finish_run, start_run
from avo_sqlite import SQLiteEventStore


async def main(path: str, run_id: str, worker: str, count: int) -> None:
    async with SQLiteEventStore(path) as store:
        own = await start_run(store)
        for n in range(count):
            await store.append_event(event(run_id, EventType.MODEL_REQUESTED, worker=worker, n=n))
            await store.append_event(event(own, EventType.MODEL_REQUESTED, n=n))
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # both finalize only once both appended
        try:
            await finish_run(store, run_id)
            outcome = "won"
        except (EventInvariantError, RunAlreadyTerminalError) as exc:
            outcome = f"lost:{type(exc).__name__}"
        print(f"{own} {outcome}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
