"""PostgreSQL store benchmark: the fake-model tool loop on PostgresEventStore.

N tool calls with distinct arguments, then a final answer, for N = 20, 200 and
2,000, every step durably checkpointed. Prints per-step time and bytes stored
per step, early- vs late-step time, and the same figures as ratios against a
baseline measured in the same run on the same server: a plain asyncpg loop
doing one committed transaction of ten small rows per step (what one loop step
costs the server at the least).

Needs the test server (``scripts/ensure-services.sh``) or AVO_TEST_POSTGRES_DSN;
prints a skip line and exits 0 without one. Works in a throwaway schema.

Run: python benchmarks/postgres_store.py [--quick]
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, LoopPolicy, ModelResponse
from avo.models import ToolCall

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")
TABLES = ("avo_runs", "avo_events", "avo_checkpoints", "avo_checkpoint_items", "avo_leases")


class EchoArgs(BaseModel):
    """Arguments of the benchmark tool."""

    n: int


def _dsn() -> str | None:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip()
    if dsn:
        return dsn
    return DSN_FILE.read_text().strip() if DSN_FILE.is_file() else None


def _script(n: int) -> list[ModelResponse]:
    calls = [ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": i})) for i in range(n)]
    return [*calls, ModelResponse(content="done")]


async def _stored_bytes(conn: Any) -> tuple[int, int]:
    """(bytes on disk incl. indexes and dead row versions awaiting VACUUM, live row bytes)."""
    disk = live = 0
    for table in TABLES:
        disk += await conn.fetchval("SELECT pg_total_relation_size($1::regclass)", table)
        live += await conn.fetchval(f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {table} t")
    return int(disk), int(live)


async def _baseline(conn: Any, steps: int) -> float:
    """Seconds per step of one committed ten-row transaction per step."""
    await conn.execute("CREATE TABLE IF NOT EXISTS baseline (run text, step int, k int, v text)")
    rows = [("r", 0, k, "x" * 40) for k in range(10)]
    started = time.perf_counter()
    for step in range(steps):
        async with conn.transaction():
            await conn.executemany(
                "INSERT INTO baseline VALUES ($1, $2, $3, $4)",
                [(r, step, k, v) for r, _, k, v in rows],
            )
    return (time.perf_counter() - started) / steps


class _Marks:
    """Wraps the store to time every checkpoint (one mark per half step)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.marks: list[float] = []

    async def save_checkpoint(self, checkpoint: Any, event: Any) -> Any:
        self.marks.append(time.perf_counter())
        return await self._inner.save_checkpoint(checkpoint, event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def _loop(store: Any, conn: Any, n: int) -> dict[str, float]:
    tool = FunctionTool(
        name="echo", description="echo n", arguments_model=EchoArgs, function=lambda a: {"n": a.n}
    )
    marks = _Marks(store)
    runtime = AgentRuntime(
        provider=FakeProvider(_script(n), record_requests=False),
        tools=[tool],
        policy=LoopPolicy(
            max_steps=n + 5,
            max_runtime_seconds=None,
            repeated_action_limit=n + 5,
            no_progress_window=n + 5,
        ),
        event_store=marks,  # type: ignore[arg-type]
    )
    disk_before, live_before = await _stored_bytes(conn)
    started = time.perf_counter()
    cpu_started = time.process_time()
    result = await runtime.run("benchmark")
    cpu = time.process_time() - cpu_started
    elapsed = time.perf_counter() - started
    assert result.status.value == "completed", result
    disk_after, live_after = await _stored_bytes(conn)
    deltas = [b - a for a, b in itertools.pairwise(marks.marks[2::2])]
    tenth = max(1, len(deltas) // 10)
    return {
        "per_step_ms": elapsed / (n + 1) * 1e3,
        "cpu_step_ms": cpu / (n + 1) * 1e3,
        "early_ms": statistics.median(deltas[:tenth]) * 1e3 if deltas else 0.0,
        "late_ms": statistics.median(deltas[-tenth:]) * 1e3 if deltas else 0.0,
        "disk_per_step": (disk_after - disk_before) / (n + 1),
        "live_per_step": (live_after - live_before) / (n + 1),
    }


async def main(quick: bool) -> int:
    dsn = _dsn()
    if dsn is None:
        print("postgres_store: skipped (no server: run scripts/ensure-services.sh)")
        return 0
    import asyncpg

    from avo_postgres import PostgresEventStore

    schema = f"avo_bench_{uuid.uuid4().hex[:8]}"
    sizes = [20, 200] if quick else [20, 200, 2000]
    store = PostgresEventStore(dsn, schema=schema)
    await store.connect()
    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        await _loop(store, conn, 20)  # warm up imports, statement caches
        baseline = min([await _baseline(conn, 200) for _ in range(3)])
        rows = {n: await _loop(store, conn, n) for n in sizes}
    finally:
        await store.close()
        await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await conn.close()
    print("postgres_store: fake-model tool loop on PostgresEventStore, durable checkpoint per step")
    print(f"baseline: asyncpg, one committed 10-row transaction per step: {baseline * 1e3:.3f} ms")
    print("(wall = elapsed; cpu = this process's CPU time, steadier on a shared machine;")
    print(" live B = bytes of live rows; disk B = relation growth incl. not-yet-vacuumed versions)")
    print(
        f"{'N':>6} {'wall ms':>8} {'x base':>7} {'cpu ms':>7} {'early ms':>9} {'late ms':>8} "
        f"{'live B/step':>11} {'disk B/step':>11}"
    )
    for n, r in rows.items():
        print(
            f"{n:>6} {r['per_step_ms']:>8.3f} {r['per_step_ms'] / (baseline * 1e3):>7.1f} "
            f"{r['cpu_step_ms']:>7.3f} {r['early_ms']:>9.3f} {r['late_ms']:>8.3f} "
            f"{r['live_per_step']:>11.0f} {r['disk_per_step']:>11.0f}"
        )
    largest = rows[sizes[-1]]
    print(
        f"ratio per-step N={sizes[-1]} / N=20: "
        f"{largest['per_step_ms'] / rows[20]['per_step_ms']:.2f}x; "
        f"late/early step at N={sizes[-1]}: {largest['late_ms'] / largest['early_ms']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main("--quick" in sys.argv)))
