"""Concurrency benchmark: many runs sharing one store in one process.

The fake-model tool loop (50 tool steps a run, then an answer) on the
in-memory, SQLite (``synchronous`` NORMAL, the default, and FULL: an fsync per
commit) and PostgreSQL stores, with 1, 10, 100 and 1,000 runs
started together (``asyncio.gather``) on one store instance. For each level it
prints:

- steps per second (all runs' steps over the wall time) and its ratio to the
  1-run figure of the same store, measured in the same process;
- p50 / p99 **step latency**: the time one run takes for one step (from its
  tool start to its next tool start, both durable), what a user of that run
  waits; with N runs sharing one CPU it is at least N times a step's CPU;
- p50 / p99 **write latency**: one ``append_batch`` call, call to return
  (durable), the part the store decides;
- MB per live run: the process's resident memory while the runs are live,
  over the resident memory before they started, divided by the runs;
- CPU µs per step: this process's CPU time (all threads) over the steps, the
  figure a busy machine disturbs least.

Levels below 100 runs are repeated (waves) until about 2,000 steps are
measured, and every level is measured in interleaved rounds (the best round
is reported, the median beside it), since this shared machine's figures move
by a factor of two during a busy spell. Targets (issue #26): on SQLite, 100
runs reach at least 3x the 1-run throughput with p99 step latency under
20 ms; 1,000 runs complete with bounded memory.

PostgreSQL needs the test server (``scripts/ensure-services.sh``) or
AVO_TEST_POSTGRES_DSN; without one its rows are skipped, saying so.

Run: python benchmarks/concurrency.py [--quick] [--stores memory,sqlite,sqlite-full,postgres]
     [--levels 1,10,100,1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from avo import AgentRuntime, FakeProvider
from avo.events import EventType
from avo.storage.memory import InMemoryEventStore
from avo_evals.bench import default_policy, echo_tool, tool_loop_script

STEPS = 50
MIN_STEPS = 2_000  # per measurement at the small levels (repeated waves)
DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


TOOL = echo_tool()  # a trivial function on the loop: the runtime's and the store's figures
_STARTED = EventType.TOOL_STARTED
CPU = [0.0]  # process CPU seconds of the waves measured so far


class Recorder:
    """The store, with the time of every batch and of every durable tool start recorded."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.writes: list[float] = []  # append_batch call -> return, seconds
        self.starts: dict[str, list[float]] = {}  # run id -> times its tool starts were durable

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
        began = time.perf_counter()
        stored = await self._store.append_batch(run, events, checkpoint)
        done = time.perf_counter()
        self.writes.append(done - began)
        if any(event.event_type is _STARTED for event in events):
            self.starts.setdefault(run.run_id, []).append(done)
        return stored

    def step_latencies(self) -> list[float]:
        return [b - a for marks in self.starts.values() for a, b in itertools.pairwise(marks)]


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


async def _wave(store: Any, runs: int) -> tuple[float, float]:
    """``runs`` runs started together; returns (wall seconds, peak extra MB while live)."""
    runtimes = [
        AgentRuntime(
            provider=FakeProvider(tool_loop_script(STEPS), record_requests=False),
            tools=[TOOL],
            policy=default_policy(STEPS),
            event_store=store,
        )
        for _ in range(runs)
    ]
    gc.collect()
    base = _rss_mb()
    peak = base
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss_mb())
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    began, cpu_began = time.perf_counter(), time.process_time()
    results = await asyncio.gather(*(runtime.run("benchmark") for runtime in runtimes))
    wall = time.perf_counter() - began
    CPU[0] += time.process_time() - cpu_began
    done.set()
    await sampler
    peak = max(peak, _rss_mb())
    bad = [r for r in results if r.status.value != "completed"]
    assert not bad, bad[0]
    return wall, peak - base


def _pct(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _measure(open_store: Callable[[int], Awaitable[Any]], runs: int) -> dict[str, float]:
    waves = max(1, math.ceil(MIN_STEPS / (runs * (STEPS + 1))))
    store = await open_store(runs)
    recorder = Recorder(store)
    wall, extra_mb = 0.0, 0.0
    CPU[0] = 0.0
    try:
        for _ in range(waves):
            seconds, mb = await _wave(recorder, runs)
            wall += seconds
            extra_mb = max(extra_mb, mb)
    finally:
        await store.close()
    steps = waves * runs * (STEPS + 1)
    steps_lat = recorder.step_latencies()
    return {
        "steps_s": steps / wall,
        "cpu_us": CPU[0] / steps * 1e6,
        "step_p50": _pct(steps_lat, 0.5) * 1e3,
        "step_p99": _pct(steps_lat, 0.99) * 1e3,
        "write_p50": _pct(recorder.writes, 0.5) * 1e3,
        "write_p99": _pct(recorder.writes, 0.99) * 1e3,
        "mb_run": extra_mb / runs,
    }


def _dsn() -> str | None:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip()
    if dsn:
        return dsn
    return DSN_FILE.read_text().strip() if DSN_FILE.is_file() else None


async def _openers(
    names: list[str], directory: Path, levels: list[int]
) -> dict[str, Callable[[int], Awaitable[Any]] | str]:
    """How to open a fresh store of each kind for N runs (or why it is skipped)."""
    openers: dict[str, Callable[[int], Awaitable[Any]] | str] = {}
    counter = iter(range(1_000_000))
    for name in names:
        if name == "memory":

            async def memory(runs: int) -> Any:
                return InMemoryEventStore()

            openers[name] = memory
        elif name == "sqlite":
            from avo_sqlite import SQLiteEventStore

            async def sqlite(runs: int) -> Any:
                return SQLiteEventStore(directory / f"concurrency-{next(counter)}.db")

            openers[name] = sqlite
        elif name == "sqlite-full":
            from avo_sqlite import SQLiteEventStore

            async def sqlite_full(runs: int) -> Any:
                path = directory / f"concurrency-{next(counter)}.db"
                return SQLiteEventStore(path, synchronous="FULL")

            openers[name] = sqlite_full
        elif name == "postgres":
            openers[name] = await _postgres_opener()
        else:
            raise SystemExit(f"unknown store {name!r}; use memory, sqlite, sqlite-full or postgres")
    return openers


async def _postgres_opener() -> Callable[[int], Awaitable[Any]] | str:
    dsn = _dsn()
    if dsn is None:
        return "no server (run scripts/ensure-services.sh or set AVO_TEST_POSTGRES_DSN)"
    try:
        import asyncpg

        from avo_postgres import PostgresEventStore
    except ImportError as exc:
        return f"avo-postgres is not installed ({exc})"
    try:
        conn = await asyncpg.connect(dsn, timeout=5)
    except (OSError, asyncpg.PostgresError) as exc:
        return f"cannot reach {dsn}: {exc}"
    await conn.close()

    async def postgres(runs: int) -> Any:
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        store = PostgresEventStore(dsn, schema=schema, concurrency=runs)
        await store.connect()
        return _DropsSchema(store, dsn, schema)

    return postgres


class _DropsSchema:
    """A PostgreSQL store whose throwaway schema is dropped when it is closed."""

    def __init__(self, store: Any, dsn: str, schema: str) -> None:
        self._store, self._dsn, self._schema = store, dsn, schema

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def close(self) -> None:
        import asyncpg

        await self._store.close()
        conn = await asyncpg.connect(self._dsn)
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {self._schema} CASCADE")
        finally:
            await conn.close()


async def main(stores: list[str], levels: list[int], rounds: int) -> None:
    print("concurrency: fake-model tool loop, 50 tool steps a run, N runs on one store")
    print(
        f"(best of {rounds} interleaved rounds by steps/s, median steps/s alongside; "
        f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs)"
    )
    with tempfile.TemporaryDirectory(prefix="avo-concurrency-") as tmp:
        openers = await _openers(stores, Path(tmp), levels)
        for name, opener in openers.items():
            if isinstance(opener, str):
                print(f"\n{name}: skipped: {opener}")
                continue
            await _measure(opener, 1)  # warm up imports, caches, the server
            rows: dict[int, list[dict[str, float]]] = {n: [] for n in levels}
            for _ in range(rounds):
                for n in levels:
                    if n >= 1000 and rows[n]:
                        continue  # one round of the largest level: it takes a while
                    rows[n].append(await _measure(opener, n))
            _print(name, levels, rows)


def _print(name: str, levels: list[int], rows: dict[int, list[dict[str, float]]]) -> None:
    best = {n: max(rows[n], key=lambda r: r["steps_s"]) for n in levels}
    base = best[levels[0]]["steps_s"]
    print(f"\n{name}")
    print(
        f"{'runs':>6} {'steps/s':>9} {'median':>8} {'ratio':>6} {'step p50':>9} "
        f"{'step p99':>9} {'write p50':>10} {'write p99':>10} {'MB/run':>7} {'cpu µs/step':>11}"
    )
    for n in levels:
        r = best[n]
        median = statistics.median(x["steps_s"] for x in rows[n])
        print(
            f"{n:>6} {r['steps_s']:>9.0f} {median:>8.0f} {r['steps_s'] / base:>5.2f}x "
            f"{r['step_p50']:>7.2f}ms {r['step_p99']:>7.2f}ms {r['write_p50']:>8.3f}ms "
            f"{r['write_p99']:>8.3f}ms {r['mb_run']:>7.3f} {r['cpu_us']:>11.0f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="levels 1, 10, 100; 2 rounds")
    parser.add_argument("--stores", default="memory,sqlite,sqlite-full,postgres")
    parser.add_argument("--levels", default="1,10,100,1000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    chosen_levels = [int(x) for x in args.levels.split(",")]
    chosen_rounds = args.rounds
    if args.quick:
        chosen_levels = [n for n in chosen_levels if n <= 100]
        chosen_rounds = min(chosen_rounds, 2)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    asyncio.run(main(args.stores.split(","), chosen_levels, chosen_rounds))
