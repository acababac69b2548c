"""Context guard benchmark: what the request seam and the compaction policy cost per step.

A fake-model tool loop on the in-memory store grows a transcript to 2,000
messages (1,000 tool calls), measured three ways in the same process,
interleaved over several rounds:

- ``plain``: no shapers, no bundles (the kernel's own loop);
- ``guarded``: the compaction bundle with a window so large it never
  compacts — so what is measured is the guard: every step the seam updates
  its token gauge, asks the policy, and the policy compares the estimate with
  the window;
- ``guard only``: the seam's ``shape`` call alone on a 2,000-message
  transcript that gains two messages per call (the same work, without the loop).

Target: the guard costs under 5% of a step at 2,000 messages. Printed as
ratios against the plain step of the same run, CPU time (this process), best
and median of the rounds.

Run: python benchmarks/context_guard.py [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import time
from typing import Any

from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, LoopPolicy, ModelResponse
from avo._run_context import _RunContext
from avo._seam import RunSeam
from avo.events import RunLogState
from avo.models import ModelRequest, RunRecord, ToolCall
from avo.shaping import bind_shaper
from avo.state import RunState
from avo.storage.memory import InMemoryEventStore
from avo_context import CompactionPolicy

LATE = 100  # the last steps measured: the transcript holds ~1,800-2,000 messages


class Args(BaseModel):
    """Arguments of the benchmark tool."""

    n: int


def _runtime(steps: int, guarded: bool, marks: list[float]) -> AgentRuntime:
    def tool(args: Args) -> dict[str, Any]:
        marks.append(time.process_time())
        return {"n": args.n, "text": "output line " * 8}

    script = [
        ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": i})) for i in range(steps)
    ]
    extra: dict[str, Any] = {}
    if guarded:
        from avo_context import CompactionBundle

        extra = {"bundles": [CompactionBundle()], "context_window": 100_000_000}
    return AgentRuntime(
        provider=FakeProvider([*script, ModelResponse(content="done")], record_requests=False),
        tools=[
            FunctionTool(
                name="echo",
                description="Echo.",
                arguments_model=Args,
                function=tool,
                run_in_thread=False,  # the kernel's step, not a thread hand-off, is measured
            )
        ],
        event_store=InMemoryEventStore(),
        policy=LoopPolicy(
            max_steps=steps + 5,
            repeated_action_limit=steps + 5,
            no_progress_window=steps + 5,
            max_runtime_seconds=None,
        ),
        **extra,
    )


async def _loop(steps: int, guarded: bool) -> float:
    """CPU µs per step over the last LATE steps of a run of ``steps`` tool calls."""
    marks: list[float] = []
    runtime = _runtime(steps, guarded, marks)
    gc.collect()
    result = await runtime.run("bench")
    assert result.status.value == "completed", result.error
    late = marks[-LATE - 1 :]
    return (late[-1] - late[0]) / (len(late) - 1) * 1e6


def _turn(call_id: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "name": "echo", "content": "x" * 80},
    ]


async def _guard_only(messages: int, calls: int) -> float:
    """CPU µs of one seam.shape() with the compaction policy on a growing transcript."""
    transcript: list[dict[str, Any]] = [{"role": "user", "content": "bench"}]
    for i in range(messages // 2):
        transcript.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "echo", "arguments": "{}"},
                    }
                ],
            }
        )
        transcript.append(
            {"role": "tool", "tool_call_id": f"c{i}", "name": "echo", "content": "x" * 80}
        )
    runtime = AgentRuntime(provider=FakeProvider([]), context_window=100_000_000)
    seam = RunSeam([bind_shaper(CompactionPolicy())], window=runtime.context_window)
    ctx = _RunContext(
        run=RunRecord(run_id="bench", task="bench"),
        log=RunLogState(run_id="bench", created=True, state=RunState.MODEL_PENDING),
        policy=LoopPolicy(),
        messages=transcript,
        started_at=runtime.clock(),
    )
    request = ModelRequest(run_id="bench", step=1, messages=list(transcript))
    await seam.shape(runtime, ctx, request)  # the first call records the view
    total = 0.0
    for i in range(calls):
        transcript.append({"role": "assistant", "content": None, "tool_calls": []})
        transcript.append(
            {"role": "tool", "tool_call_id": f"n{i}", "name": "echo", "content": "y" * 80}
        )
        request = ModelRequest.model_construct(
            run_id="bench", step=i + 2, messages=list(transcript), tools=[]
        )
        started = time.process_time()
        await seam.shape(runtime, ctx, request)
        total += time.process_time() - started
    return total / calls * 1e6


async def main(quick: bool) -> None:
    steps = 300 if quick else 1_000
    rounds = 2 if quick else 5
    plain: list[float] = []
    guarded: list[float] = []
    alone: list[float] = []
    for _ in range(rounds):
        plain.append(await _loop(steps, guarded=False))
        guarded.append(await _loop(steps, guarded=True))
        alone.append(await _guard_only(2 * steps, 200))
    load = os.getloadavg()[0]
    print("context_guard: the request seam + compaction policy below its threshold")
    print(
        f"(CPU time, last {LATE} steps of {steps} tool calls: ~{2 * steps} messages; "
        f"best and median of {rounds} interleaved rounds; load average {load:.1f})"
    )
    print(f"{'':24}{'best µs':>10}{'median µs':>12}")
    for label, values in (("plain step", plain), ("guarded step", guarded), ("guard only", alone)):
        print(f"{label:24}{min(values):>10.1f}{statistics.median(values):>12.1f}")
    step = min(plain)
    print(f"ratio guard only / plain step: {min(alone) / step:.3f} (target < 0.05)")
    print(
        f"ratio guarded step / plain step: {min(guarded) / step:.3f} "
        f"(median {statistics.median(guarded) / statistics.median(plain):.3f})"
    )


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv))
