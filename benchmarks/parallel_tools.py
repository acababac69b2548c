"""Parallel tool calls: one turn of three read-only calls vs three turns of one call.

Three shapes of the same work (three calls to an inspect-only tool, then an
answer), on the in-memory store:

- ``parallel``: one model turn asks for the three calls; they run concurrently;
- ``one turn, serial``: the same turn with ``max_parallel_tool_calls=1``;
- ``three turns``: three model turns of one call each (what a model that cannot
  ask for parallel calls does).

With tools that sleep 50 ms it prints the wall time of each shape and the
ratios (the parallel turn should take about a third of the three turns). With
tools that return at once it prints the kernel's CPU cost per tool call of each
shape, so the batch machinery's own overhead is visible. Best of five
interleaved rounds, median alongside. With ``--instructions`` it also counts
the instructions per tool call of each shape under valgrind (callgrind: a run
of 60 turns minus one of 10, so start-up cancels out), a figure the machine's
load does not move.

Run: python benchmarks/parallel_tools.py [--quick] [--instructions | --instructions-only]
"""

from __future__ import annotations

import asyncio
import gc
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, LoopPolicy, ModelResponse
from avo.models import ToolCall, ToolRisk

CALLS = 3


class ReadArgs(BaseModel):
    """Arguments of the benchmark tool."""

    path: str


def _tool(delay: float) -> FunctionTool[ReadArgs]:
    async def read(args: ReadArgs) -> dict[str, str]:
        if delay:
            await asyncio.sleep(delay)
        return {"path": args.path, "text": "contents"}

    return FunctionTool(
        name="read",
        description="Read a file.",
        arguments_model=ReadArgs,
        function=read,
        risk=ToolRisk.INSPECT,
    )


def _calls(turn: int) -> list[ToolCall]:
    return [ToolCall(name="read", arguments={"path": f"t{turn}/f{i}.txt"}) for i in range(CALLS)]


def parallel_script(turns: int) -> list[ModelResponse]:
    """``turns`` turns of three calls each, then an answer."""
    return [ModelResponse(tool_calls=_calls(t)) for t in range(turns)] + [
        ModelResponse(content="done")
    ]


def serial_script(turns: int) -> list[ModelResponse]:
    """The same calls, one per turn, then an answer."""
    return [ModelResponse(tool_calls=[call]) for t in range(turns) for call in _calls(t)] + [
        ModelResponse(content="done")
    ]


SHAPES: dict[str, tuple[Callable[[int], list[ModelResponse]], int]] = {
    "parallel": (parallel_script, 4),
    "one turn, serial": (parallel_script, 1),
    "three turns": (serial_script, 4),
}


async def _one(shape: str, turns: int, delay: float) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``shape``."""
    build, limit = SHAPES[shape]
    runtime = AgentRuntime(
        provider=FakeProvider(build(turns), record_requests=False),
        tools=[_tool(delay)],
        policy=LoopPolicy(
            max_steps=turns * CALLS + 5, max_runtime_seconds=None, max_parallel_tool_calls=limit
        ),
    )
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    result = await runtime.run("read three files")
    assert result.status.value == "completed", result
    return time.perf_counter() - started, time.process_time() - cpu


async def main(quick: bool) -> None:
    rounds = 3 if quick else 5
    await _one("parallel", 2, 0.0)  # warm up
    print("parallel_tools: three read-only calls in one turn vs one per turn (in-memory store)")
    print(f"(best of {rounds} interleaved rounds, median alongside; load {os.getloadavg()[0]:.1f})")

    walls: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    for _ in range(rounds):
        for shape in SHAPES:
            walls[shape].append((await _one(shape, 1, 0.05))[0])
    print("\ntools sleep 50 ms; one unit of work = three calls and the answer")
    print(f"{'shape':>18} {'best ms':>9} {'median ms':>10}")
    for shape, values in walls.items():
        print(f"{shape:>18} {min(values) * 1e3:>9.1f} {statistics.median(values) * 1e3:>10.1f}")
    base = min(walls["three turns"])
    print(f"ratio parallel / three turns: {min(walls['parallel']) / base:.2f}x wall")
    print(f"ratio one turn serial / three turns: {min(walls['one turn, serial']) / base:.2f}x wall")

    turns = 20 if quick else 100
    cpus: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    for _ in range(rounds):
        for shape in SHAPES:
            cpus[shape].append((await _one(shape, turns, 0.0))[1] / (turns * CALLS) * 1e6)
    print(f"\ntools return at once; {turns * CALLS} calls a run: kernel CPU per tool call")
    print(f"{'shape':>18} {'best µs':>9} {'median µs':>10}")
    for shape, values in cpus.items():
        print(f"{shape:>18} {min(values):>9.1f} {statistics.median(values):>10.1f}")
    base = min(cpus["three turns"])
    print(f"ratio parallel / three turns: {min(cpus['parallel']) / base:.2f}x CPU per call")


def _instructions(shape: str, turns: int) -> int:
    """Instructions valgrind counts for one process running ``turns`` turns of ``shape``."""
    code = (
        f"import asyncio, sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
        f"import parallel_tools as p; asyncio.run(p._one({shape!r}, {turns}, 0.0))"
    )
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            code,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts in every run
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"valgrind printed no instruction count:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def instructions() -> None:
    short, long = 10, 60
    calls = (long - short) * CALLS
    print(f"\ninstructions per tool call under callgrind ({long} turns minus {short})")
    per_call = {}
    for shape in SHAPES:
        per_call[shape] = (_instructions(shape, long) - _instructions(shape, short)) / calls
        print(f"{shape:>18} {per_call[shape] / 1e3:>9.0f}k")
    base = per_call["three turns"]
    print(f"ratio parallel / three turns: {per_call['parallel'] / base:.2f}x instructions per call")
    serial = per_call["one turn, serial"]
    print(f"ratio parallel / one turn serial: {per_call['parallel'] / serial:.2f}x")


if __name__ == "__main__":
    counting = {"--instructions", "--instructions-only"} & set(sys.argv)
    if counting and shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind on PATH (apt-get install valgrind)")
    if "--instructions-only" not in sys.argv:
        asyncio.run(main("--quick" in sys.argv))
    if counting:
        instructions()
