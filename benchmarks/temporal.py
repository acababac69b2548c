"""Temporal engine benchmark: runs/s with 1, 2 and 4 workers, against the in-process runtime.

Every configuration runs the same work on the same kind of store (a SQLite
file): RUNS runs of the fake ``loop`` model's tool loop, CALLS non-idempotent
``append_line`` calls each, then an answer. In process, one runtime drives
the runs concurrently (asyncio); on Temporal, K ``avo worker --engine temporal``
processes share them through a dev server started here on a free port.

Prints runs/s per configuration and each as a ratio to in-process, and the
per-step overhead of the workflow path: the latency of one step of a single
run driven by a workflow (model and tool calls as activities, every store
write an activity) divided by the same step in process.

Run: python benchmarks/temporal.py [--quick]   (needs avo-temporal[dev-server])
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "contrib" / "temporal" / "tests"))

from temporal_fleet import Fleet  # noqa: E402

from avo.compose import compose, open_store, resolve_config  # noqa: E402
from avo.engines import RunSubmission  # noqa: E402
from avo.models import new_id  # noqa: E402
from avo_temporal.devserver import dev_server  # noqa: E402
from avo_temporal.engine import TemporalEngine  # noqa: E402

CALLS = 3
STEPS = CALLS + 1  # model steps per run


async def _in_process(fleet: Fleet, runs: int) -> float:
    """Seconds to drive ``runs`` runs concurrently in this process."""
    sys.path.insert(0, str(fleet.plugins))
    resolved = resolve_config(fleet.config, environ={}, user=False)
    async with compose(resolved=resolved, workspace=str(fleet.root)) as made:
        started = time.perf_counter()
        await asyncio.gather(*(made.runtime.run(f"ip-{new_id()}") for _ in range(runs)))
        return time.perf_counter() - started


async def _on_temporal(fleet: Fleet, runs: int, prefix: str) -> float:
    """Seconds from the first submission until all ``runs`` runs completed on the workers."""
    engine = TemporalEngine({"address": fleet.address, "task_queue": fleet.queue}, environ={})
    started = time.perf_counter()
    run_ids = [
        await engine.submit(RunSubmission(task=f"{prefix}-{i}", run_id=new_id()))
        for i in range(runs)
    ]
    store = open_store(fleet.store)
    try:
        pending = set(run_ids)
        while pending:
            for run_id in list(pending):
                head = await store.get_run(run_id)
                if head is not None and head.state.value == "completed":
                    pending.discard(run_id)
                elif head is not None and head.state.value in {"failed", "cancelled", "stopped"}:
                    raise SystemExit(f"run {run_id} ended {head.state.value}: {head.error}")
            await asyncio.sleep(0.05)
        return time.perf_counter() - started
    finally:
        await store.close()


def _wait_ready(fleet: Fleet) -> None:
    asyncio.run(_on_temporal(fleet, 1, "warm"))


def main(quick: bool) -> None:
    runs = 12 if quick else 40
    root = Path(tempfile.mkdtemp(prefix="avo-temporal-bench-"))
    try:
        with dev_server(root / "server") as address:
            rows: list[tuple[str, float]] = []
            fleet = Fleet(root / "inproc", address, store=str(root / "inproc" / "runs.db"))
            asyncio.run(_in_process(fleet, 2))  # warm up
            in_process = runs / asyncio.run(_in_process(fleet, runs))
            single = asyncio.run(_in_process(fleet, 1))
            rows.append(("in-process", in_process))
            overhead = None
            for workers in (1, 2, 4):
                workspace = root / f"w{workers}"
                workspace.mkdir()
                fleet = Fleet(workspace, address, store=str(workspace / "runs.db"))
                try:
                    for _ in range(workers):
                        fleet.start_worker("--concurrency", "50")
                    _wait_ready(fleet)
                    if workers == 1:
                        one = asyncio.run(_on_temporal(fleet, 1, "single"))
                        overhead = one / single
                    rate = runs / asyncio.run(_on_temporal(fleet, runs, "bench"))
                    rows.append((f"temporal, {workers} worker{'s' if workers > 1 else ''}", rate))
                finally:
                    fleet.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"temporal: {runs} runs x {STEPS} steps ({CALLS} non-idempotent tool calls), SQLite store"
    )
    print(f"(load average {os.getloadavg()[0]:.1f}; 2 shared cores: compare ratios, not seconds)")
    print(f"{'configuration':<22} {'runs/s':>8} {'vs in-process':>14}")
    for name, rate in rows:
        print(f"{name:<22} {rate:>8.2f} {rate / in_process:>13.3f}x")
    if overhead is not None:
        print(
            f"per-step latency of one run, workflow path / in-process: {overhead:.1f}x "
            f"(each step: a model activity, a tool activity and store-write activities)"
        )


if __name__ == "__main__":
    main("--quick" in sys.argv)
