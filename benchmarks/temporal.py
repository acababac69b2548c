"""Temporal engine benchmark: runs/s with 1, 2 and 4 workers, against the in-process runtime.

Every configuration runs the same work on the same kind of store: RUNS runs of
the fake ``loop`` model's tool loop, CALLS non-idempotent ``append_line`` calls
each, then an answer. In process, the runs are driven concurrently (asyncio),
each by a runtime of its own (a runtime drives one run at a time); on
Temporal, K ``avo worker --engine temporal`` processes share them through a
dev server started here on a free port. Configurations are measured
in interleaved rounds (the machine is shared: compare ratios from one run); the
best round of each is printed.

Scenarios:

- ``cpu``: the model answers at once. Every cost is CPU (workers, dev server,
  store) on the machine's cores: more workers only help with free cores.
- ``latency``: the model takes LATENCY seconds per answer, like a real
  provider, and each worker runs at most SLOTS model/tool calls at once
  (``avo worker --concurrency``): more workers, more calls in flight.

Also printed: the per-step latency of one run driven by a workflow / in
process, and the same work with the dev server in memory instead of its SQLite
file. ``--before DIR`` adds the same rows for the avo_temporal source in DIR
(e.g. a ``git worktree`` of an older commit), run by workers in the same
rounds: before/after ratios from one session. ``--postgres`` adds the
``cpu`` rows on the PostgreSQL store of scripts/ensure-services.sh.

Run: python benchmarks/temporal.py [--quick] [--before DIR] [--postgres]
(needs avo-temporal[dev-server])
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

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
LATENCY = 0.25  # seconds per model answer in the latency scenario
SLOTS = 4  # model/tool calls at once per worker in the latency scenario
DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


class _Fleet(Fleet):
    """A fleet whose workers may import another avo_temporal source (``--before``)."""

    def __init__(
        self, *args: Any, source: Path | None = None, schema: str = "", **kwargs: Any
    ) -> None:
        self.source = source
        self.settings = {"schema": schema} if schema else {}
        super().__init__(*args, **kwargs)

    def env(self) -> dict[str, str]:
        env = super().env()
        if self.source is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(self.source), env["PYTHONPATH"]])
        return env


async def _in_process(fleet: _Fleet, runs: int, *, shared: bool = False) -> float:
    """Seconds to drive ``runs`` runs concurrently in this process, one runtime each.

    One ``AgentRuntime`` drives one run at a time (its lock), so concurrent runs
    need a runtime each, as the web UI composes one per run; all share one open
    store. The runtimes are composed before the clock starts (a server would
    keep them ready; the workers compose theirs once at start). ``shared``
    gives all runs one runtime instead (they then run one after another: the
    earlier baseline, kept as a row to show the difference).
    """
    if str(fleet.plugins) not in sys.path:
        sys.path.insert(0, str(fleet.plugins))
    resolved = resolve_config(fleet.config, environ={}, user=False)
    store = open_store(fleet.store, settings=fleet.settings)
    try:
        async with contextlib.AsyncExitStack() as stack:
            made = [
                await stack.enter_async_context(
                    compose(resolved=resolved, event_store=store, workspace=str(fleet.root))
                )
                for _ in range(1 if shared else runs)
            ]
            runtimes = [made[0].runtime] * runs if shared else [one.runtime for one in made]
            started = time.perf_counter()
            await asyncio.gather(*(runtime.run(f"ip-{new_id()}") for runtime in runtimes))
            return time.perf_counter() - started
    finally:
        await store.close()


async def _on_temporal(fleet: Fleet, runs: int, prefix: str) -> float:
    """Seconds from the first submission until all ``runs`` runs completed on the workers."""
    engine = TemporalEngine({"address": fleet.address, "task_queue": fleet.queue}, environ={})
    started = time.perf_counter()
    run_ids = [
        await engine.submit(RunSubmission(task=f"{prefix}-{i}", run_id=new_id()))
        for i in range(runs)
    ]
    store = open_store(fleet.store, settings=fleet.settings)
    try:
        pending = set(run_ids)
        while pending:
            for run_id in list(pending):
                head = await store.get_run(run_id)
                if head is not None and head.state.value == "completed":
                    pending.discard(run_id)
                elif head is not None and head.state.value in {"failed", "cancelled", "stopped"}:
                    raise SystemExit(f"run {run_id} ended {head.state.value}: {head.error}")
            await asyncio.sleep(0.02)
        return time.perf_counter() - started
    finally:
        await store.close()


class Config:
    """One row: where the runs are driven, on what store, with which workers."""

    def __init__(
        self,
        name: str,
        *,
        workers: int = 0,
        latency: float = 0.0,
        server: str = "file",
        store: str = "sqlite",
        source: Path | None = None,
        shared: bool = False,
    ) -> None:
        self.name, self.workers, self.latency = name, workers, latency
        self.shared = shared  # in process: all runs on one runtime (one after another)
        self.server, self.store, self.source = server, store, source
        self.rates: list[float] = []
        self.step: float | None = None  # seconds per step of a single run

    def fleet(self, root: Path, address: str, dsn: str) -> _Fleet:
        where = root / uuid.uuid4().hex[:8]
        where.mkdir()
        if self.store == "postgres":
            schema = f"avo_bench_{uuid.uuid4().hex[:10]}"
            fleet = _Fleet(
                where,
                address,
                store=dsn,
                source=self.source,
                schema=schema,
                store_settings=f'[store.settings]\nschema = "{schema}"\n',
            )
        else:
            fleet = _Fleet(where, address, store=str(where / "runs.db"), source=self.source)
        fleet.write_config(latency=self.latency)
        return fleet

    def measure(self, root: Path, address: str, dsn: str, runs: int, single: bool) -> None:
        fleet = self.fleet(root, address, dsn)
        if not self.workers:
            asyncio.run(_in_process(fleet, 2))  # warm up
            self.rates.append(runs / asyncio.run(_in_process(fleet, runs, shared=self.shared)))
            if single:
                self.step = min(self.step or 1e9, asyncio.run(_in_process(fleet, 1)) / STEPS)
            return
        slots = str(SLOTS if self.latency else 50)
        try:
            for _ in range(self.workers):
                fleet.start_worker("--concurrency", slots)
            asyncio.run(_on_temporal(fleet, 2, "warm"))
            if single:
                one = asyncio.run(_on_temporal(fleet, 1, "single")) / STEPS
                self.step = min(self.step or 1e9, one)
            self.rates.append(runs / asyncio.run(_on_temporal(fleet, runs, "bench")))
        finally:
            fleet.stop()


def _configs(before: Path | None, postgres: bool) -> list[Config]:
    rows = [Config("in-process")]
    versions: list[tuple[str, Path | None]] = [("", None)]
    if before is not None:
        versions.append(("before: ", before))
    for label, source in versions:
        for workers in (1, 2, 4):
            rows.append(Config(f"{label}temporal, {workers}w", workers=workers, source=source))
        rows.append(
            Config(f"{label}temporal, 1w, mem server", workers=1, server="memory", source=source)
        )
    if postgres:
        rows.append(Config("in-process, postgres", store="postgres"))
        for workers in (1, 2, 4):
            rows.append(
                Config(f"temporal, {workers}w, postgres", workers=workers, store="postgres")
            )
    rows.append(Config(f"in-process, {LATENCY:g}s model", latency=LATENCY))
    rows.append(Config(f"in-process, {LATENCY:g}s model, 1 runtime", latency=LATENCY, shared=True))
    for label, source in versions:
        for workers in (1, 2, 4):
            rows.append(
                Config(
                    f"{label}temporal, {workers}w, {LATENCY:g}s model",
                    workers=workers,
                    latency=LATENCY,
                    source=source,
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="12 runs, 2 rounds")
    parser.add_argument("--before", type=Path, help="a checkout of an older avo to compare")
    parser.add_argument("--postgres", action="store_true", help="add PostgreSQL store rows")
    args = parser.parse_args()
    runs, rounds = (12, 2) if args.quick else (40, 3)
    before = None
    if args.before is not None:
        before = (args.before / "contrib" / "temporal" / "src").resolve()
        if not (before / "avo_temporal").is_dir():
            raise SystemExit(f"--before {args.before}: no contrib/temporal/src/avo_temporal there")
    dsn = ""
    if args.postgres:
        dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip() or (
            DSN_FILE.read_text().strip() if DSN_FILE.is_file() else ""
        )
        if not dsn:
            raise SystemExit(
                f"--postgres: run scripts/ensure-services.sh first (writes {DSN_FILE})"
            )
    configs = _configs(before, bool(dsn))
    root = Path(tempfile.mkdtemp(prefix="avo-temporal-bench-"))
    loads = [os.getloadavg()[0]]
    try:
        with (
            dev_server(root / "server") as address,
            dev_server(root / "mem-server", persistent=False) as memory,
        ):
            for round_ in range(rounds):
                for config in configs:
                    where = memory if config.server == "memory" else address
                    config.measure(root, where, dsn, runs, single=round_ == 0)
                loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _report(configs, runs, rounds, loads)


def _report(configs: list[Config], runs: int, rounds: int, loads: list[float]) -> None:
    print(
        f"temporal: {runs} runs x {STEPS} steps ({CALLS} non-idempotent tool calls), best of "
        f"{rounds} interleaved rounds; SQLite store unless named"
    )
    print(
        f"(load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores: compare "
        "ratios, not seconds)"
    )
    base: dict[tuple[bool, str], Config] = {}  # the in-process row per (latency?, store)
    for config in configs:
        if not config.workers and not config.shared:
            base[bool(config.latency), config.store] = config
    print(f"{'configuration':<38} {'runs/s':>8} {'vs in-process':>14} {'step ms':>8}")
    for config in configs:
        rate = max(config.rates)
        reference = base.get((bool(config.latency), config.store))
        ratio = rate / max(reference.rates) if reference is not None else float("nan")
        step = f"{config.step * 1000:8.1f}" if config.step is not None else f"{'':8}"
        print(f"{config.name:<38} {rate:>8.2f} {ratio:>13.3f}x {step}")
    plain = base.get((False, "sqlite"))
    if plain is not None and plain.step:
        for config in configs:
            if config.workers == 1 and not config.latency and config.step:
                ratio = config.step / plain.step
                print(f"per-step latency of one run, {config.name} / in-process: {ratio:.1f}x")
    print(
        f"(latency rows: the model answers after {LATENCY:g} s; each worker runs at most "
        f"{SLOTS} calls at once)"
    )


if __name__ == "__main__":
    main()
