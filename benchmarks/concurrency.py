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
  figure a busy machine disturbs least;
- loop µs per step: the event loop thread's CPU time over the steps. Every
  run's Python (the kernel's and the store's) runs there under one GIL, so
  it bounds throughput at 1e6 / loop µs steps per second, whatever the
  number of runs; what the store's worker thread does (group commits, WAL
  checkpoints, with the GIL released in SQLite's C code) is the difference
  to the CPU column;
- ceiling: 1e6 / loop µs as a ratio to the 1-run figure, the most that level
  could reach if no run ever waited and nothing else held the GIL. Below the
  table, how busy the 1-run level keeps the loop thread: near 100 % the single
  run is CPU-bound, and many runs can only add the second core's GIL-free work
  (SQLite's C code) and what they share (a commit) to it;
- gc µs per step: the time the cyclic garbage collector ran, per step (on
  the loop thread): it grows with the live objects of many runs.

Levels below 100 runs are repeated (waves) until about 2,000 steps are
measured, and every level is measured in interleaved rounds (the best round
is reported, the median beside it), since this shared machine's figures move
by a factor of two during a busy spell. Targets (issue #26): on SQLite, 100
runs reach at least 3x the 1-run throughput with p99 step latency under
20 ms; 1,000 runs complete with bounded memory.

PostgreSQL needs the test server (``scripts/ensure-services.sh``) or
AVO_TEST_POSTGRES_DSN; without one its rows are skipped, saying so.

Every level is measured twice per round, interleaved: **tuned**, the way a
server process (``avo worker``, ``avo ui``, ``avo serve-mcp``) runs by default
(``avo.gc_tuning.tune_gc_for_server``: the start-up heap frozen, thresholds
10000,50,100), and **untuned** (CPython's default collector, 700,10,10, nothing
frozen). The main columns are the tuned figures; the last three columns are
the untuned steps/s, loop µs and gc µs of the same rounds. ``--gc
10000,50,100`` sets the tuned thresholds instead (as ``AVO_SERVER_GC`` does).

Run: python benchmarks/concurrency.py [--quick] [--stores memory,sqlite,sqlite-full,postgres]
     [--levels 1,10,100,1000] [--rounds 3] [--gc THRESHOLDS]
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
from avo.gc_tuning import tune_gc_for_server
from avo.storage.memory import InMemoryEventStore
from avo_evals.bench import default_policy, echo_tool, tool_loop_script

STEPS = 50
MIN_STEPS = 2_000  # per measurement at the small levels (repeated waves)
DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


TOOL = echo_tool()  # a trivial function on the loop: the runtime's and the store's figures
_STARTED = EventType.TOOL_STARTED
CPU = [0.0]  # process CPU seconds of the waves measured so far
LOOP_CPU = [0.0]  # the event loop thread's CPU seconds of the waves measured so far
GC_TIME = [0.0]  # seconds the collector ran during the waves measured so far


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


class _GcClock:
    """A ``gc.callbacks`` entry adding up the CPU time of the collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began: float | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.thread_time()
        elif self._began is not None:
            self.seconds += time.thread_time() - self._began
            self._began = None


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
    began, cpu_began, loop_began = time.perf_counter(), time.process_time(), time.thread_time()
    collected = _GcClock()
    gc.callbacks.append(collected)
    try:
        results = await asyncio.gather(*(runtime.run("benchmark") for runtime in runtimes))
    finally:
        gc.callbacks.remove(collected)
    wall = time.perf_counter() - began
    CPU[0] += time.process_time() - cpu_began
    LOOP_CPU[0] += time.thread_time() - loop_began
    GC_TIME[0] += collected.seconds
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
    CPU[0] = LOOP_CPU[0] = GC_TIME[0] = 0.0
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
        "loop_us": LOOP_CPU[0] / steps * 1e6,
        "gc_us": GC_TIME[0] / steps * 1e6,
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


UNTUNED = gc.get_threshold()  # CPython's defaults (700, 10, 10) before anything changes them
GC_SETTING: dict[str, str] = {}  # AVO_SERVER_GC for the tuned measurements (--gc)
_TUNED_FIRST = itertools.cycle((False, True))


def _collector(tuned: bool) -> None:
    """The collector as a server runs it (tuned) or as CPython starts (untuned)."""
    gc.unfreeze()
    gc.set_threshold(*UNTUNED)
    if tuned:
        tune_gc_for_server(GC_SETTING)


async def _measure_both(open_store: Callable[[int], Awaitable[Any]], runs: int) -> dict[str, float]:
    """One tuned and one untuned measurement (the untuned figures as ``untuned_*``).

    Which of the two goes first alternates from call to call, so a slow spell
    of the machine does not always hit the same one.
    """
    figures: dict[bool, dict[str, float]] = {}
    first = next(_TUNED_FIRST)
    try:
        for tuned_now in (first, not first):
            _collector(tuned_now)
            figures[tuned_now] = await _measure(open_store, runs)
    finally:
        _collector(False)
    tuned, untuned = figures[True], figures[False]
    for key in ("steps_s", "loop_us", "gc_us"):
        tuned[f"untuned_{key}"] = untuned[key]
    return tuned


async def main(stores: list[str], levels: list[int], rounds: int) -> None:
    print("concurrency: fake-model tool loop, 50 tool steps a run, N runs on one store")
    print(
        f"(best of {rounds} interleaved rounds by steps/s, median steps/s alongside; "
        f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs)"
    )
    tuned = GC_SETTING.get("AVO_SERVER_GC") or "10000,50,100"
    print(
        f"main columns: TUNED as a server runs (avo.gc_tuning: start-up heap frozen, gc "
        f"thresholds {tuned}); 'untuned' columns: CPython's default collector "
        f"{UNTUNED}, same rounds"
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
                    rows[n].append(await _measure_both(opener, n))
            _print(name, levels, rows)


def _print(name: str, levels: list[int], rows: dict[int, list[dict[str, float]]]) -> None:
    best = {n: max(rows[n], key=lambda r: r["steps_s"]) for n in levels}
    base = best[levels[0]]["steps_s"]
    print(f"\n{name}")
    print(
        f"{'runs':>6} {'steps/s':>9} {'median':>8} {'ratio':>6} {'ceiling':>7} {'step p50':>9} "
        f"{'step p99':>9} {'write p50':>10} {'write p99':>10} {'MB/run':>7} {'cpu µs/step':>11} "
        f"{'loop µs':>7} {'gc µs':>6} | {'untuned steps/s':>15} {'loop µs':>7} {'gc µs':>6} "
        f"{'tuned/untuned':>13}"
    )
    for n in levels:
        r = best[n]
        median = statistics.median(x["steps_s"] for x in rows[n])
        print(
            f"{n:>6} {r['steps_s']:>9.0f} {median:>8.0f} {r['steps_s'] / base:>5.2f}x "
            f"{1e6 / r['loop_us'] / base:>6.2f}x "
            f"{r['step_p50']:>7.2f}ms {r['step_p99']:>7.2f}ms {r['write_p50']:>8.3f}ms "
            f"{r['write_p99']:>8.3f}ms {r['mb_run']:>7.3f} {r['cpu_us']:>11.0f} "
            f"{r['loop_us']:>7.0f} {r['gc_us']:>6.0f} | {r['untuned_steps_s']:>15.0f} "
            f"{r['untuned_loop_us']:>7.0f} {r['untuned_gc_us']:>6.0f} "
            f"{r['steps_s'] / r['untuned_steps_s']:>12.2f}x"
        )
    if levels[0] == 1:
        one = best[1]
        print(
            f"1 run keeps the event loop thread busy {one['loop_us'] * one['steps_s'] / 1e4:.0f}% "
            "of its wall time (its CPU per step over its wall time per step)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="levels 1, 10, 100; 2 rounds")
    parser.add_argument("--stores", default="memory,sqlite,sqlite-full,postgres")
    parser.add_argument("--levels", default="1,10,100,1000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--gc", help="collector thresholds of the tuned measurements, e.g. 10000,50,100"
    )
    args = parser.parse_args()
    if args.gc:
        from avo.exceptions import ConfigError
        from avo.gc_tuning import server_gc_thresholds

        try:
            server_gc_thresholds({"AVO_SERVER_GC": args.gc})
        except ConfigError as exc:
            parser.error(f"--gc {args.gc!r}: give one to three integers, e.g. 10000,50,100 ({exc})")
        GC_SETTING["AVO_SERVER_GC"] = args.gc
    chosen_levels = [int(x) for x in args.levels.split(",")]
    chosen_rounds = args.rounds
    if args.quick:
        chosen_levels = [n for n in chosen_levels if n <= 100]
        chosen_rounds = min(chosen_rounds, 2)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    asyncio.run(main(args.stores.split(","), chosen_levels, chosen_rounds))
