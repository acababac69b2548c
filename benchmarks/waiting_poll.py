"""What one look at a waiting run's log costs: the whole log vs the events after the last seen.

A run paused at a prompt (``avo run`` on a terminal, the chat) polls its log
every 0.2 s for an answer given from another shell, and the web UI's live page
polls the same way. Before, each look read the whole log (``get_events``);
now it reads only what came after the last event it saw
(``get_events_after``). This times both on a SQLite store for runs of several
lengths, in interleaved rounds (the machine is shared: the ratio of medians
from one session is the figure), and prints the ratio.

    python benchmarks/waiting_poll.py [--events 100,1000,5000] [--rounds 7] [--looks 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from avo.events import EventType
from avo.testing.store_values import event, start_run


async def _bench(events: int, rounds: int, looks: int) -> tuple[float, float]:
    from avo_sqlite import SQLiteEventStore

    with tempfile.TemporaryDirectory(prefix="avo-bench-poll-") as folder:
        store = SQLiteEventStore(Path(folder) / "runs.db")
        run_id = await start_run(store)
        for n in range(events - 4):  # start_run wrote 4
            payload = {"n": n, "text": "x" * 200}
            await store.append_event(event(run_id, EventType.MODEL_REQUESTED, **payload))
        await store.flush()
        last = (await store.get_events(run_id))[-1].sequence
        whole: list[float] = []
        tail: list[float] = []
        for _ in range(rounds):  # interleaved: each round times both
            started = time.perf_counter()
            for _ in range(looks):
                await store.get_events(run_id)
            whole.append((time.perf_counter() - started) / looks)
            started = time.perf_counter()
            for _ in range(looks):
                await store.get_events_after(run_id, last)
            tail.append((time.perf_counter() - started) / looks)
        await store.close()
    return statistics.median(whole), statistics.median(tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="100,1000,5000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--looks", type=int, default=50)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; SQLite; median of {args.rounds} rounds")
    print(f"{'events':>8}  {'whole log':>12}  {'tail only':>12}  {'ratio':>7}")
    for count in (int(part) for part in args.events.split(",")):
        whole, tail = asyncio.run(_bench(count, args.rounds, args.looks))
        print(f"{count:>8}  {whole * 1e6:>10.0f}µs  {tail * 1e6:>10.0f}µs  {whole / tail:>6.1f}x")


if __name__ == "__main__":
    main()
