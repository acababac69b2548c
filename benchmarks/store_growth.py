"""SQLite store growth benchmark: the fake-model tool loop with a checkpoint every step.

For N = 20, 200 and 2,000 tool steps on ``SQLiteEventStore`` (WAL, default
settings) it prints per-step time (wall and CPU of this process, worker thread
included), database bytes per step, and early- vs late-step time; then

- the ratio of per-step time at 2,000 vs 20 steps (target: within 1.5x);
- the same loop on the in-memory store, so the store's own share is visible;
- the store alone, driven like the runtime drives it: two ``append_batch``
  calls a step (the runtime's path for a store that has it) and the same
  events through the single-event methods (the path of a store without it);
- a plain sqlite3 loop doing one committed transaction of ten small rows per
  step in WAL mode (synchronous FULL, SQLite's default, and NORMAL), measured
  in the same run, and the store's per-step time as a ratio of it;
- two concurrent runs on one file while a third connection holds the write
  lock for 30 ms every 100 ms: the event loop's worst stall, for this store
  (blocking calls on its worker thread) and for a variant that makes the same
  calls on the event loop thread.

Run: python benchmarks/store_growth.py [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from avo import AgentRuntime, FakeProvider
from avo.models import utc_now
from avo.storage.memory import InMemoryEventStore
from avo_evals.bench import echo_tool, loop_policy, step_row, tool_loop_script
from avo_sqlite import SQLiteEventStore

SETTINGS: dict[str, Any] = {}

# The loop and its figures are avo_evals.bench's (shared with kernel_loop.py and
# `avo bench`): a trivial tool on the event loop, so the figures are the
# runtime's and the store's, not a worker-thread hop per tool call.
TOOL = echo_tool()
ROUNDS = 5
_script = tool_loop_script
_policy = loop_policy


def _fresh(directory: Path, name: str) -> Path:
    path = directory / name
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path


class _Marks:
    """Mixin recording the time of every checkpoint (two per tool step), batched or not."""

    marks: list[float]

    # Plain functions handing back the store's coroutine: timing the steps adds no
    # coroutine of its own to every write.
    def save_checkpoint(self, checkpoint: Any, event: Any) -> Any:
        self.marks.append(time.perf_counter())
        return super().save_checkpoint(checkpoint, event)  # type: ignore[misc]

    def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
        if checkpoint is not None:
            self.marks.append(time.perf_counter())
        return super().append_batch(run, events, checkpoint)  # type: ignore[misc]


class TimedSQLite(_Marks, SQLiteEventStore):
    def __init__(self, path: Path, **settings: Any) -> None:
        super().__init__(path, **settings)
        self.marks = []


class TimedMemory(_Marks, InMemoryEventStore):
    def __init__(self) -> None:
        super().__init__()
        self.marks = []


async def _loop(store: Any, n: int) -> dict[str, float]:
    runtime = AgentRuntime(
        provider=FakeProvider(_script(n), record_requests=False),
        tools=[TOOL],
        policy=_policy(n),
        event_store=store,
    )
    gc.collect()
    started, cpu_started = time.perf_counter(), time.process_time()
    result = await runtime.run("benchmark")
    cpu, wall = time.process_time() - cpu_started, time.perf_counter() - started
    assert result.status.value == "completed", result
    return step_row(store.marks[2::2], wall, cpu, n + 1)


async def _sqlite_run(directory: Path, n: int) -> dict[str, float]:
    path = _fresh(directory, f"growth-{n}.db")
    store = TimedSQLite(path, **SETTINGS)
    try:
        row = await _loop(store, n)
        row["bytes_step"] = await store.database_bytes() / (n + 1)
    finally:
        await store.close()
    row["file_step"] = path.stat().st_size / (n + 1)
    return row


async def _store_only(directory: Path, n: int, *, batched: bool) -> dict[str, float]:
    """The store alone, driven like the runtime drives it: per-step cost at the start vs end.

    Each step appends the loop's 14 events and two checkpoints whose history
    grows by two messages, one tool-call id and three fingerprints; the time
    is measured around the store calls only, so the kernel's own cost (and its
    growth) is out of the figure. ``batched`` makes the runtime's two
    ``append_batch`` calls a step (10 events + head + checkpoint before the
    tool runs, 4 events + head + checkpoint before the next model call);
    otherwise the same events go through the single-event methods, as they do
    for a store without ``append_batch``.
    """
    from avo.events import AgentEvent, EventType
    from avo.models import Checkpoint, RunRecord, TokenUsage
    from avo.state import RunState as S

    path = _fresh(directory, f"store-only-{n}-{batched}.db")
    store = SQLiteEventStore(path)
    run_id = "store-only"
    sequence = 0

    def ev(kind: EventType, **payload: Any) -> AgentEvent:
        nonlocal sequence
        sequence += 1  # the runtime pre-numbers its events
        return AgentEvent(run_id=run_id, event_type=kind, payload=payload, sequence=sequence)

    def moved(a: S, b: S) -> AgentEvent:
        return ev(EventType.STATE_CHANGED, from_state=a.value, to_state=b.value)

    run = RunRecord(run_id=run_id, task="t")
    await store.create_run(run, ev(EventType.RUN_CREATED, task="t", policy={}))
    await store.append_event(moved(S.CREATED, S.MODEL_PENDING))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "t"}]
    done: set[str] = set()
    prints: list[str] = []
    costs: list[float] = []

    def cp(state: S, step: int) -> tuple[Checkpoint, AgentEvent]:
        c = Checkpoint.model_construct(
            checkpoint_id=f"{step}-{state.value}",
            run_id=run_id,
            created_at=utc_now(),
            state=state,
            messages=list(messages),
            next_step=step + 1,
            token_usage=TokenUsage(),
            token_accounting_available=True,
            consecutive_errors=0,
            repeated_action_history=list(prints),
            observation_fingerprints=list(prints),
            model_response_fingerprints=list(prints),
            progress_markers=[],
            completed_tool_call_ids=set(done),
            user_state={},
            policy={"max_steps": n + 5},
            provider_metadata={"provider_type": "x"},
            pending_response=None,
            last_event_sequence=0,
        )
        return c, ev(EventType.CHECKPOINT_CREATED, checkpoint_id=c.checkpoint_id)

    async def write(events: list[AgentEvent], checkpoint: Checkpoint | None) -> None:
        if batched:
            await store.append_batch(run, events, checkpoint)
            return
        for event in events:  # the runtime's replay for stores without append_batch
            if event.event_type is EventType.CHECKPOINT_CREATED:
                assert checkpoint is not None
                await store.save_checkpoint(checkpoint, event)
            elif event.event_type is EventType.STATE_CHANGED:
                await store.append_event_and_update_run(event, run)
            else:
                await store.append_event(event)

    for step in range(1, n + 1):
        call = f"call-{step:06d}-{'x' * 26}"
        responded = ev(EventType.MODEL_RESPONDED, step=step, response={})
        decided = moved(S.MODEL_PENDING, S.DECISION_RECEIVED)
        messages.append({"role": "assistant", "tool_calls": [{"id": call}]})
        prints.append(f"{step:064d}")
        checkpoint, checkpointed = cp(S.DECISION_RECEIVED, step)
        before_tool = [
            responded,
            decided,
            checkpointed,
            ev(EventType.TOOL_REQUESTED, tool_call_id=call),
            moved(S.DECISION_RECEIVED, S.TOOL_PENDING),
            ev(EventType.TOOL_APPROVAL_REQUESTED, tool_call_id=call),
            moved(S.TOOL_PENDING, S.APPROVAL_PENDING),
            ev(EventType.TOOL_APPROVED, tool_call_id=call),
            moved(S.APPROVAL_PENDING, S.TOOL_EXECUTING),
            ev(EventType.TOOL_STARTED, tool_call_id=call),
        ]
        started = time.perf_counter()  # the store calls only, not building their values
        await write(before_tool, checkpoint)
        cost = time.perf_counter() - started
        completed = ev(EventType.TOOL_COMPLETED, tool_call_id=call, output=step)
        recorded = moved(S.TOOL_EXECUTING, S.OBSERVATION_RECORDED)
        messages.append({"role": "tool", "tool_call_id": call, "content": str(step)})
        done.add(call)
        checkpoint, checkpointed = cp(S.OBSERVATION_RECORDED, step)
        pending = moved(S.OBSERVATION_RECORDED, S.MODEL_PENDING)
        started = time.perf_counter()
        await write([completed, recorded, checkpointed, pending], checkpoint)
        costs.append(cost + time.perf_counter() - started)
    await store.close()
    tenth = max(1, n // 10)
    return {
        "early_us": statistics.median(costs[:tenth]) * 1e6,
        "late_us": statistics.median(costs[-tenth:]) * 1e6,
        "mean_us": statistics.fmean(costs) * 1e6,
    }


def _raw_baseline(directory: Path, steps: int, synchronous: str) -> dict[str, float]:
    """One committed transaction of ten small rows per step, plain sqlite3, WAL."""
    path = _fresh(directory, f"raw-{synchronous}.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("CREATE TABLE rows (run TEXT, step INTEGER, n INTEGER, body TEXT)")
    body = "x" * 40
    started, cpu_started = time.perf_counter(), time.process_time()
    for step in range(steps):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO rows VALUES (?, ?, ?, ?)", [("run", step, i, body) for i in range(10)]
        )
        conn.execute("COMMIT")
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    conn.close()
    return {"wall_us": wall / steps * 1e6, "cpu_us": cpu / steps * 1e6}


class InlineSQLite(TimedSQLite):
    """The same store, but every SQLite call runs on the event loop thread (the anti-pattern)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, commit_delay=0)  # no buffered writes: the worker never flushes

    async def _call(self, fn: Any, *args: Any, turn: bool = True, drain: bool = True) -> Any:
        return self._core.drained(fn, *args) if drain else fn(*args)


async def _stall(directory: Path, store_class: Any, n: int) -> dict[str, float]:
    """Two concurrent runs on one file, a lock-holding third writer, and a 1 ms ticker."""
    path = _fresh(directory, f"stall-{store_class.__name__}.db")
    await SQLiteEventStore(path).close()  # create the schema first
    if store_class is TimedMemory:
        stores = [TimedMemory(), TimedMemory()]
    else:
        stores = [store_class(path), store_class(path)]
    stop = threading.Event()

    def hog() -> None:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        while not stop.is_set():
            conn.execute("BEGIN IMMEDIATE")
            time.sleep(0.03)
            conn.execute("COMMIT")
            stop.wait(0.07)
        conn.close()

    lags: list[float] = []

    async def ticker() -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - before - 0.001)

    thread = threading.Thread(target=hog)
    thread.start()
    tick = asyncio.create_task(ticker())
    started = time.perf_counter()
    try:
        await asyncio.gather(*(_loop(store, n) for store in stores))
    finally:
        stop.set()
        thread.join()
        await tick
        for store in stores:
            await store.close()
    lags.sort()
    return {
        "runs_s": time.perf_counter() - started,
        "max_ms": lags[-1] * 1e3,
        "p99_ms": lags[int(len(lags) * 0.99)] * 1e3,
    }


async def main(quick: bool) -> None:
    sizes = [20, 200] if quick else [20, 200, 2000]
    with tempfile.TemporaryDirectory(prefix="avo-bench-") as tmp:
        directory = Path(tmp)
        await _sqlite_run(directory, 20)  # warm up
        # Rounds interleave the sizes and the two stores, so a slow spell of this shared
        # machine hits them alike; the best round is reported (N=2,000 runs twice).
        runs: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
        mem_runs: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
        for round_ in range(ROUNDS):
            for n in sizes:
                if n >= 2000 and round_ >= 2:
                    continue
                runs[n].append(await _sqlite_run(directory, n))
                mem_runs[n].append(await _loop(TimedMemory(), n))
        rows = {n: min(runs[n], key=lambda r: r["cpu_us"]) for n in sizes}
        memory = {n: min(mem_runs[n], key=lambda r: r["cpu_us"]) for n in sizes}
        medians = {n: statistics.median(r["cpu_us"] for r in runs[n]) for n in sizes}
        full = min(
            (_raw_baseline(directory, 200, "FULL") for _ in range(3)), key=lambda r: r["wall_us"]
        )
        normal = min(
            (_raw_baseline(directory, 200, "NORMAL") for _ in range(3)), key=lambda r: r["wall_us"]
        )
        store_only: dict[tuple[int, bool], dict[str, float]] = {}
        for n in sizes:
            # interleaved and best of three (one at 2,000): the two paths see the same load
            tries: dict[bool, list[dict[str, float]]] = {True: [], False: []}
            for _ in range(3 if n < 2000 else 1):
                for batched in (True, False):
                    tries[batched].append(await _store_only(directory, n, batched=batched))
            for batched, found in tries.items():
                store_only[(n, batched)] = min(found, key=lambda r: r["mean_us"])
        stall_n = 100 if quick else 200
        ours = await _stall(directory, TimedSQLite, stall_n)
        inline = await _stall(directory, InlineSQLite, stall_n)
        in_memory = await _stall(directory, TimedMemory, stall_n)

    print("store_growth: fake-model tool loop on SQLiteEventStore, checkpoint every step")
    print(
        f"(machine load average {os.getloadavg()[0]:.1f}; best of {ROUNDS} interleaved rounds,"
        " median alongside; cpu = this process, worker thread included)"
    )
    print(
        f"{'N':>6} {'wall µs/step':>13} {'cpu µs/step':>12} {'median cpu':>11} {'early µs':>9} "
        f"{'late µs':>9} {'DB B/step':>10} {'file B/step':>12} {'in-memory cpu µs/step':>22}"
    )
    for n in sizes:
        r, m = rows[n], memory[n]
        print(
            f"{n:>6} {r['wall_us']:>13.0f} {r['cpu_us']:>12.0f} {medians[n]:>11.0f} "
            f"{r['early_us']:>9.0f} {r['late_us']:>9.0f} {r['bytes_step']:>10.0f} "
            f"{r['file_step']:>12.0f} {m['cpu_us']:>22.0f}"
        )
    big = rows[sizes[-1]]
    print(
        f"ratio per-step N={sizes[-1]} / N=20: cpu {big['cpu_us'] / rows[20]['cpu_us']:.2f}x, "
        f"wall {big['wall_us'] / rows[20]['wall_us']:.2f}x (target <= 1.5x)"
    )
    print(f"ratio late/early step at N={sizes[-1]}: {big['late_us'] / big['early_us']:.2f}x")
    print(f"bytes per step N={sizes[-1]} / N=20: {big['bytes_step'] / rows[20]['bytes_step']:.2f}x")
    print("the store alone, driven like the runtime (14 events + 2 checkpoints a step):")
    order = sorted(store_only, key=lambda key: (not key[1], key[0]))  # batched first
    for n, batched in order:
        r = store_only[(n, batched)]
        how = "2 append_batch calls" if batched else "16 single-event calls"
        print(
            f"  {how}, N={n:>5}: mean {r['mean_us']:.0f} µs/step, first tenth "
            f"{r['early_us']:.0f} µs, last tenth {r['late_us']:.0f} µs "
            f"(late/early {r['late_us'] / r['early_us']:.2f}x)"
        )
    for n in sizes:
        gain = store_only[(n, False)]["mean_us"] / store_only[(n, True)]["mean_us"]
        print(f"  batched vs single-event calls at N={n}: {gain:.1f}x less store time a step")
    at200 = rows[200]
    store_share = at200["cpu_us"] - memory[200]["cpu_us"]
    print(
        f"store's own share at N=200: {store_share:.0f} µs/step cpu "
        f"({at200['cpu_us']:.0f} sqlite - {memory[200]['cpu_us']:.0f} in-memory)"
    )
    print(
        f"plain sqlite3, 10 rows/committed tx/step, WAL: synchronous=FULL "
        f"{full['wall_us']:.0f} µs wall ({full['cpu_us']:.0f} cpu); synchronous=NORMAL "
        f"{normal['wall_us']:.0f} µs wall ({normal['cpu_us']:.0f} cpu)"
    )
    print(
        f"ratio store per-step (N=200, wall) / plain loop: vs FULL "
        f"{at200['wall_us'] / full['wall_us']:.2f}x, vs NORMAL "
        f"{at200['wall_us'] / normal['wall_us']:.2f}x"
    )
    print(f"two concurrent runs of {stall_n} steps + a writer holding the lock 30 ms / 100 ms:")
    print(
        f"  worker thread (this store): loop stall max {ours['max_ms']:.1f} ms, "
        f"p99 {ours['p99_ms']:.1f} ms, runs took {ours['runs_s']:.2f} s"
    )
    print(
        f"  calls on the loop thread:   loop stall max {inline['max_ms']:.1f} ms, "
        f"p99 {inline['p99_ms']:.1f} ms, runs took {inline['runs_s']:.2f} s"
    )
    print(
        f"  in-memory store (never yields: a run holds the loop to its end): loop stall max "
        f"{in_memory['max_ms']:.1f} ms, p99 {in_memory['p99_ms']:.1f} ms, "
        f"runs took {in_memory['runs_s']:.2f} s"
    )


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv))
