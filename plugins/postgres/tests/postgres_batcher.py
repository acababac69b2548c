"""One process racing ``append_batch`` on a shared run (run by test_postgres_batches.py).

    python postgres_batcher.py DSN SCHEMA RUN_ID WORKER BATCHES

It opens its own store (its own pool, as another host would), prints ``ready``,
waits until the test releases an advisory lock so every process starts at
once, then appends BATCHES batches of 1-4 events (every third round also one
single ``append_event``), each batch replacing the run head with a record
whose ``steps`` names the batch. Reports every acknowledged (event_id,
sequence) as one JSON document on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys

from avo.events import EventType
from avo.testing.stores import event
from avo_postgres import PostgresEventStore

START_LOCK = 0x61766F62  # the advisory lock the test holds until every process is ready


def batch_number(worker: int, batch: int) -> int:
    """The ``steps`` value of the run head a batch writes."""
    return worker * 1000 + batch


async def main(argv: list[str]) -> list[tuple[str, int]]:
    dsn, schema, run_id, worker_s, batches_s = argv
    worker, batches = int(worker_s), int(batches_s)
    acked: list[tuple[str, int]] = []
    async with PostgresEventStore(dsn, schema=schema, pool_max_size=2) as store:
        head = await store.get_run(run_id)
        assert head is not None
        import asyncpg

        gate = await asyncpg.connect(dsn)
        try:
            print("ready", flush=True)
            await gate.execute("SELECT pg_advisory_lock_shared($1)", START_LOCK)
            await gate.execute("SELECT pg_advisory_unlock_shared($1)", START_LOCK)
        finally:
            await gate.close()
        for b in range(batches):
            size = 1 + (worker + b) % 4
            marks = [
                event(run_id, EventType.MODEL_REQUESTED, worker=worker, b=b, k=k)
                for k in range(size)
            ]
            record = head.model_copy(update={"steps": batch_number(worker, b)})
            stored = await store.append_batch(record, marks)
            acked += [(e.event_id, e.sequence) for e in stored]
            if b % 3 == 0:
                single = await store.append_event(
                    event(run_id, EventType.MODEL_REQUESTED, worker=worker, b=b, single=True)
                )
                acked.append((single.event_id, single.sequence))
    return acked


if __name__ == "__main__":
    report = asyncio.run(main(sys.argv[1:]))
    sys.stdout.write(json.dumps(report) + "\n")
