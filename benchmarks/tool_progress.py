"""What recording tool progress costs a run (avo.tool_progress).

In one process, interleaved rounds of the same in-memory run (a FakeProvider
asking for ``CALLS`` tool calls, then answering):

- ``plain``: the runtime's tool invocation without the progress wrapper (the
  baseline; patched out for the round);
- ``silent``: with the wrapper, a tool that reports nothing (every run pays this);
- ``chatty``: with the wrapper, a tool that reports ``REPORTS`` updates per call
  (throttled to the first and the newest per call).

Printed as ratios to ``plain`` (per tool call), with the events recorded.

Run: python benchmarks/tool_progress.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from typing import Any

from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, LoopPolicy
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.storage.memory import InMemoryEventStore
from avo.tool_progress import report_progress
from avo.tools import FunctionTool

CALLS = 200
REPORTS = 100
ROUNDS = 9


class Args(BaseModel):
    n: int


def _tool(reports: int) -> FunctionTool[Args]:
    async def work(args: Args) -> str:
        for step in range(1, reports + 1):
            report_progress(step, reports, "working")
        return "ok"

    return FunctionTool(
        name="work", description="w", arguments_model=Args, function=work, risk=ToolRisk.EXECUTE
    )


def _script() -> list[ModelResponse]:
    calls = [
        ModelResponse(tool_call=ToolCall(tool_call_id=f"c{i}", name="work", arguments={"n": i}))
        for i in range(CALLS)
    ]
    return [*calls, ModelResponse(content="done")]


async def _run(reports: int) -> tuple[float, int]:
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=FakeProvider(_script(), record_requests=False),
        tools=[_tool(reports)],
        event_store=store,
        policy=LoopPolicy(
            max_steps=CALLS + 5, repeated_action_limit=CALLS + 5, no_progress_window=CALLS + 5
        ),
    )
    started = time.perf_counter()
    await runtime.run("go", run_id="r")
    elapsed = time.perf_counter() - started
    events = await store.get_events("r")
    return elapsed / CALLS, sum(e.event_type is EventType.TOOL_PROGRESS for e in events)


async def _plain_round() -> float:
    import avo.runtime_tools as tools_module

    original = tools_module.recording_progress

    async def passthrough(rt: Any, ctx: Any, call: Any, invocation: Any, *, live: bool) -> Any:
        return await invocation

    tools_module.recording_progress = passthrough  # type: ignore[assignment]
    try:
        return (await _run(0))[0]
    finally:
        tools_module.recording_progress = original


async def main() -> None:
    times: dict[str, list[float]] = {"plain": [], "silent": [], "chatty": []}
    recorded = 0
    for _ in range(ROUNDS):  # interleaved, so load changes hit every variant alike
        times["plain"].append(await _plain_round())
        times["silent"].append((await _run(0))[0])
        chatty, recorded = await _run(REPORTS)
        times["chatty"].append(chatty)
    base = statistics.median(times["plain"])
    print(f"load average {os.getloadavg()[0]:.2f}; {CALLS} tool calls per run, {ROUNDS} rounds")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:7s} {median * 1e6:8.1f} µs per tool call   {median / base:5.2f}x plain")
    print(f"chatty: {REPORTS} reports per call -> {recorded / CALLS:.1f} events per call recorded")


if __name__ == "__main__":
    asyncio.run(main())
