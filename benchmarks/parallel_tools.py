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
interleaved rounds, median alongside.

Run: python benchmarks/parallel_tools.py [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
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


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv))
