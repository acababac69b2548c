"""PostgreSQL store benchmark: the fake-model tool loop on PostgresEventStore.

N tool calls with distinct arguments, then a final answer, for N = 20, 200 and
2,000, every step durably checkpointed. Prints per-step time and bytes stored
per step, early- vs late-step time, and the same figures as ratios against a
baseline measured in the same run on the same server: a plain asyncpg loop
doing one committed transaction of ten small rows per step (what one loop step
costs the server at the least).

Two write paths, each measured twice:

- ``single``: the store without ``append_batch``, so the runtime writes every
  event through the single-event methods (about 14 store calls a step);
- ``batch``: ``append_batch``, which the runtime uses when the store has it:
  one call per durable boundary (two a step: before the tool runs, before the
  next model call), each one statement;
- *full run*: ``AgentRuntime.run`` on the store, the runtime's CPU included;
- *store alone*: the store calls a run made (recorded on the in-memory
  store), replayed on PostgreSQL: the store's own cost per step.

``calls`` are store calls per step; ``stmts`` the SQL statements the store
sent per step (asyncpg's query logger on every pooled connection; once a
statement is prepared, one statement is one round trip).

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
from avo.storage.memory import InMemoryEventStore

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")
TABLES = ("avo_runs", "avo_events", "avo_checkpoints", "avo_checkpoint_items", "avo_leases")
WRITES = frozenset(
    {
        "create_run",
        "append_event",
        "append_event_and_update_run",
        "save_checkpoint",
        "finalize_run",
        "update_run",
        "append_batch",
    }
)
PATHS = ("single", "batch")


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
    """Wraps the store: times every checkpoint (one mark per half step), counts writes.

    ``batch=False`` hides ``append_batch``, so the runtime falls back to the
    single-event methods.
    """

    def __init__(self, inner: Any, *, batch: bool) -> None:
        self._inner = inner
        self._batch = batch
        self.marks: list[float] = []
        self.writes = 0
        self.calls: list[tuple[str, tuple[Any, ...]]] = []  # every write, for replays

    def __getattr__(self, name: str) -> Any:
        if name == "append_batch" and not self._batch:
            raise AttributeError(name)
        attr = getattr(self._inner, name)
        if name not in WRITES:
            return attr

        async def write(*args: Any) -> Any:
            self.writes += 1
            self.calls.append((name, args))
            if name == "save_checkpoint" or (name == "append_batch" and args[2] is not None):
                self.marks.append(time.perf_counter())
            return await attr(*args)

        return write


class _Statements:
    """Counts the statements a PostgresEventStore sends (its ``connection_init``)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, record: Any) -> None:
        self.count += 1

    async def attach(self, conn: Any) -> None:
        conn.add_query_logger(self)


def _runtime(store: Any, n: int) -> AgentRuntime:
    tool = FunctionTool(
        name="echo", description="echo n", arguments_model=EchoArgs, function=lambda a: {"n": a.n}
    )
    return AgentRuntime(
        provider=FakeProvider(_script(n), record_requests=False),
        tools=[tool],
        policy=LoopPolicy(
            max_steps=n + 5,
            max_runtime_seconds=None,
            repeated_action_limit=n + 5,
            no_progress_window=n + 5,
        ),
        event_store=store,
    )


async def _loop(
    store: Any, conn: Any, statements: _Statements, n: int, *, batch: bool
) -> dict[str, float]:
    """A full run on the store: the runtime and the store together."""
    marks = _Marks(store, batch=batch)
    runtime = _runtime(marks, n)
    disk_before, live_before = await _stored_bytes(conn)
    sent_before = statements.count
    started = time.perf_counter()
    cpu_started = time.process_time()
    result = await runtime.run("benchmark")
    cpu = time.process_time() - cpu_started
    elapsed = time.perf_counter() - started
    sent = statements.count - sent_before
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
        "calls_per_step": marks.writes / (n + 1),
        "stmts_per_step": sent / (n + 1),
    }


async def _recorded(n: int, *, batch: bool) -> list[tuple[str, tuple[Any, ...]]]:
    """The store writes a run of N steps makes, recorded on the in-memory store."""
    marks = _Marks(InMemoryEventStore(), batch=batch)
    result = await _runtime(marks, n).run("benchmark")
    assert result.status.value == "completed", result
    return marks.calls


async def _store_alone(
    store: Any, statements: _Statements, n: int, *, batch: bool
) -> dict[str, float]:
    """The recorded writes of an N-step run replayed on the store: the store's own cost."""
    calls = await _recorded(n, batch=batch)
    sent_before = statements.count
    started = time.perf_counter()
    cpu_started = time.process_time()
    for name, args in calls:
        await getattr(store, name)(*args)
    cpu = time.process_time() - cpu_started
    elapsed = time.perf_counter() - started
    return {
        "per_step_ms": elapsed / (n + 1) * 1e3,
        "cpu_step_ms": cpu / (n + 1) * 1e3,
        "calls_per_step": len(calls) / (n + 1),
        "stmts_per_step": (statements.count - sent_before) / (n + 1),
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
    statements = _Statements()
    store = PostgresEventStore(dsn, schema=schema, connection_init=statements.attach)
    await store.connect()
    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        for batch in (False, True):  # warm up imports, statement caches
            await _loop(store, conn, statements, 20, batch=batch)
            await _store_alone(store, statements, 20, batch=batch)
        baseline = min([await _baseline(conn, 200) for _ in range(3)])
        full = {
            (path, n): await _loop(store, conn, statements, n, batch=path == "batch")
            for n in sizes
            for path in PATHS
        }
        alone = {
            (path, n): await _store_alone(store, statements, n, batch=path == "batch")
            for n in sizes
            for path in PATHS
        }
    finally:
        await store.close()
        await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await conn.close()
    base_ms = baseline * 1e3
    print("postgres_store: fake-model tool loop on PostgresEventStore, durable checkpoint per step")
    print(f"baseline: asyncpg, one committed 10-row transaction per step: {base_ms:.3f} ms")
    print("(wall = elapsed; cpu = this process's CPU time, steadier on a shared machine;")
    print(" live B = bytes of live rows; disk B = relation growth incl. not-yet-vacuumed versions;")
    print(" calls = store calls per step; stmts = SQL statements per step)")
    print("full run (AgentRuntime.run on the store):")
    print(
        f"{'path':>6} {'N':>6} {'wall ms':>8} {'x base':>7} {'cpu ms':>7} {'early ms':>9} "
        f"{'late ms':>8} {'live B/step':>11} {'disk B/step':>11} {'calls':>6} {'stmts':>6}"
    )
    for (path, n), r in full.items():
        print(
            f"{path:>6} {n:>6} {r['per_step_ms']:>8.3f} {r['per_step_ms'] / base_ms:>7.1f} "
            f"{r['cpu_step_ms']:>7.3f} {r['early_ms']:>9.3f} {r['late_ms']:>8.3f} "
            f"{r['live_per_step']:>11.0f} {r['disk_per_step']:>11.0f} "
            f"{r['calls_per_step']:>6.1f} {r['stmts_per_step']:>6.1f}"
        )
    print("store alone (a run's recorded store calls replayed on PostgreSQL):")
    print(
        f"{'path':>6} {'N':>6} {'wall ms':>8} {'x base':>7} {'cpu ms':>7} {'calls':>6} {'stmts':>6}"
    )
    for (path, n), r in alone.items():
        print(
            f"{path:>6} {n:>6} {r['per_step_ms']:>8.3f} {r['per_step_ms'] / base_ms:>7.1f} "
            f"{r['cpu_step_ms']:>7.3f} {r['calls_per_step']:>6.1f} {r['stmts_per_step']:>6.1f}"
        )
    top = sizes[-1]
    for path in PATHS:
        largest, smallest = full[(path, top)], full[(path, 20)]
        print(
            f"{path}: full-run per-step N={top} / N=20: "
            f"{largest['per_step_ms'] / smallest['per_step_ms']:.2f}x; "
            f"late/early step at N={top}: {largest['late_ms'] / largest['early_ms']:.2f}x"
        )
    for label, rows in (("full run", full), ("store alone", alone)):
        ratios = ", ".join(
            f"N={n}: {rows[('single', n)]['per_step_ms'] / rows[('batch', n)]['per_step_ms']:.2f}x"
            for n in sizes
        )
        print(f"{label}, single / batch wall per step: {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main("--quick" in sys.argv)))
