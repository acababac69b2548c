"""avo ui: time to first byte of the runs page and of a long run's page on a big store.

Seeds a SQLite store with N runs (default 100,000) through the store API:
each is a copy, under a new id and time, of a real run the runtime made with
the fake provider (a tool call, then an answer; ~20 events), and one run of
~2,000 events (tool steps) sits among them. Then ``avo ui`` serves that
store in a subprocess on 127.0.0.1 and this script measures, over plain
HTTP, the time to the first byte of:

- ``/`` (the runs page: 50 newest runs with their facets, the total count,
  the filter pickers), cold (first request) and warm (median of the rest);
- ``/?q=...`` (a text search over every run) and ``/?state=failed``;
- ``/?cursor=...`` (a page deep in the listing);
- ``/runs/<id>`` of the 2,000-event run;
- ``/static/app.css`` (the server's floor: no store work) as the baseline.

Targets on SQLite: runs page < 150 ms, 2,000-event run page < 300 ms.
Figures are printed as milliseconds and as ratios to the baseline.

Run: python benchmarks/ui.py [--runs N] [--keep PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, LoopPolicy, ModelResponse, ToolCall
from avo.events import TERMINAL_EVENT_TYPES, AgentEvent, EventType
from avo.models import TokenUsage, new_id, utc_now
from avo.storage.memory import InMemoryEventStore
from avo_sqlite import SQLiteEventStore


class _Args(BaseModel):
    n: int = 0


TOOL = FunctionTool(
    name="lookup", description="look up n", arguments_model=_Args, function=lambda a: {"n": a.n}
)
TASKS = [
    "summarise the failing tests in ci.log",
    "rename the config loader and update its callers",
    "find why the parser drops trailing commas",
    "write release notes for 2.4",
]


async def _template(steps: int) -> tuple[Any, list[AgentEvent]]:
    store = InMemoryEventStore()
    usage = TokenUsage(input_tokens=1200, output_tokens=80)
    script = [
        ModelResponse(tool_call=ToolCall(name="lookup", arguments={"n": i}), usage=usage)
        for i in range(steps)
    ]
    script.append(ModelResponse(content="Done: **all** looked up.", usage=usage))
    policy = LoopPolicy(max_steps=steps + 5, max_runtime_seconds=None)
    runtime = AgentRuntime(
        provider=FakeProvider(script), tools=[TOOL], event_store=store, policy=policy
    )
    result = await runtime.run("template")
    run = await store.get_run(result.run_id)
    return run, await store.get_events(result.run_id)


async def _copy(
    store: SQLiteEventStore, run: Any, events: list[AgentEvent], task: str, at: Any
) -> str:
    run_id = new_id()
    shift = at - events[0].created_at

    def moved(event: AgentEvent, payload: dict[str, Any] | None = None) -> AgentEvent:
        return event.model_copy(
            update={
                "run_id": run_id,
                "event_id": new_id(),
                "sequence": 0,
                "created_at": event.created_at + shift,
                "payload": payload if payload is not None else event.payload,
            }
        )

    head = run.model_copy(
        update={"run_id": run_id, "task": task, "created_at": at, "updated_at": at}
    )
    first = moved(events[0], {**events[0].payload, "task": task})
    await store.create_run(_created_head(head), first)
    middle = [
        moved(e)
        for e in events[1:]
        if e.event_type is not EventType.CHECKPOINT_CREATED
        and e.event_type not in TERMINAL_EVENT_TYPES
    ]
    state_event, terminal = middle[-1], moved(events[-1])
    if middle[:-1]:
        await store.append_batch(_created_head(head), middle[:-1])
    await store.finalize_run(head, state_event, terminal)
    return run_id


def _created_head(head: Any) -> Any:
    from avo.state import RunState

    return head.model_copy(update={"state": RunState.CREATED, "stop_reason": None, "output": None})


async def seed(path: Path, count: int) -> str:
    small_run, small = await _template(1)
    long_run, long = await _template(170)
    store = SQLiteEventStore(path)
    start = utc_now() - timedelta(seconds=count)
    long_id = ""
    began = time.perf_counter()
    try:
        for index in range(count):
            at = start + timedelta(seconds=index)
            task = f"{TASKS[index % len(TASKS)]} (#{index})"
            if index == count // 2:
                long_id = await _copy(store, long_run, long, f"long run: {task}", at)
            else:
                await _copy(store, small_run, small, task, at)
            if index and index % 20_000 == 0:
                print(f"  seeded {index:,} runs ({time.perf_counter() - began:.0f} s)", flush=True)
        await store.flush()
    finally:
        await store.close()
    print(
        f"seeded {count:,} runs in {time.perf_counter() - began:.0f} s "
        f"(long run: {len(long)} events)",
        flush=True,
    )
    return long_id


def ttfb(port: int, path: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    began = time.perf_counter()
    conn.request("GET", path)
    response = conn.getresponse()
    response.read(1)
    first = time.perf_counter() - began
    response.read()
    status = response.status
    conn.close()
    if status != 200:
        raise SystemExit(f"GET {path} answered {status}")
    return first * 1000


def measure(port: int, path: str, repeat: int) -> tuple[float, float]:
    cold = ttfb(port, path)
    warm = [ttfb(port, path) for _ in range(repeat)]
    return cold, statistics.median(warm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, default=None, help="seed (or reuse) this file")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory(prefix="avo-ui-bench-")
    path = args.keep or Path(folder.name) / "runs.db"
    marker = path.with_suffix(".long")
    if path.exists() and marker.exists():
        long_id = marker.read_text().strip()
        print(f"reusing {path}")
    else:
        long_id = asyncio.run(seed(path, args.runs))
        marker.write_text(long_id)
    server = subprocess.Popen(
        [sys.executable, "-m", "avo.cli", "ui", "-d", str(path), "--port", "0"],
        cwd=folder.name,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line.startswith("avo ui: "):
            raise SystemExit(f"avo ui did not start: {line!r}")
        port = int(line.strip().rstrip("/").rsplit(":", 1)[1])
        floor_cold, floor = measure(port, "/static/app.css", args.repeat)
        rows = [
            ("runs page /", "/"),
            ("text search /?q=parser", "/?q=parser"),
            ("state filter /?state=failed", "/?state=failed"),
            ("tool filter /?tool=lookup", "/?tool=lookup"),
            (f"run page, {2000}-event run", f"/runs/{long_id}"),
        ]
        print(f"\n{args.runs:,} runs on SQLite; time to first byte (ms), cold then warm median")
        print(f"{'page':34} {'cold':>8} {'warm':>8} {'warm / floor':>13}")
        print(f"{'baseline /static/app.css':34} {floor_cold:8.1f} {floor:8.1f} {1.0:12.1f}x")
        results = {}
        for label, target in rows:
            cold, warm = measure(port, target, args.repeat)
            results[label] = warm
            print(f"{label:34} {cold:8.1f} {warm:8.1f} {warm / floor:12.1f}x")
        runs_page = results["runs page /"]
        run_page = results[f"run page, {2000}-event run"]
        verdict = {True: "met", False: "MISSED"}
        print(
            f"\nruns page warm TTFB {runs_page:.0f} ms "
            f"(target < 150 ms: {verdict[runs_page < 150]}); "
            f"2,000-event run page {run_page:.0f} ms (target < 300 ms: {verdict[run_page < 300]})"
        )
    finally:
        server.terminate()
        server.wait(10)
        folder.cleanup()


if __name__ == "__main__":
    main()
