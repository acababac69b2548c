"""Measure the runtime on a deterministic fake-model tool loop (``avo bench`` and benchmarks/).

The loop: a :class:`~avo.FakeProvider` asks for N tool calls with distinct
arguments, then answers; every step is a model call, a tool call and the
checkpoints the runtime writes. :func:`measure_loop` runs it once on a given
store with a given tool and returns per-step wall and CPU time, the median
step of the run's first and last tenth, and (optionally) peak memory.
:class:`TimedStore` wraps any event store to mark each step's durable write;
:func:`step_row` turns those marks into the per-step figures. The scripts in
``benchmarks/`` and ``avo bench`` share these, so their figures are measured
the same way.
"""

from __future__ import annotations

import gc
import itertools
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, LoopPolicy, ModelResponse
from avo.models import ToolCall
from avo.storage.memory import InMemoryEventStore


class EchoArgs(BaseModel):
    """Arguments of the bare benchmark tool."""

    n: int


def echo_tool() -> FunctionTool[EchoArgs]:
    """The bare tool: returns its argument, on the event loop (no worker-thread hop)."""
    return FunctionTool(
        name="echo",
        description="echo n",
        arguments_model=EchoArgs,
        function=lambda a: {"n": a.n},
        run_in_thread=False,
    )


def echo_arguments(step: int) -> dict[str, Any]:
    """Distinct arguments per step for the echo tool."""
    return {"n": step}


def tool_loop_script(
    n: int,
    tool: str = "echo",
    arguments: Callable[[int], dict[str, Any]] = echo_arguments,
) -> list[ModelResponse]:
    """``n`` calls of ``tool`` (``arguments(step)`` each), then a final answer."""
    calls = [ModelResponse(tool_call=ToolCall(name=tool, arguments=arguments(i))) for i in range(n)]
    return [*calls, ModelResponse(content="done")]


def default_policy(n: int) -> LoopPolicy:
    """The default policy with room for ``n`` steps and no runtime limit."""
    return LoopPolicy(max_steps=n + 5, max_runtime_seconds=None)


def loop_policy(n: int) -> LoopPolicy:
    """A policy that lets an ``n``-step loop of identical calls finish: detectors relaxed.

    The repeated-action and no-progress detectors keep histories as long as
    their windows, so this policy costs more per step as the run grows than
    :func:`default_policy`; compare runs under the same policy.
    """
    return LoopPolicy(
        max_steps=n + 5,
        max_runtime_seconds=None,
        repeated_action_limit=n + 5,
        no_progress_window=n + 5,
    )


class TimedStore:
    """Any event store, with the time of each durable step boundary recorded in ``marks``.

    A mark is taken at every checkpoint (two per tool step). The store's own
    methods are bound onto the wrapper, so the wrapper adds no lookup to the
    calls it does not time; ``append_batch`` is a plain function handing back
    the store's coroutine, so timing adds no coroutine of its own to a write.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.marks: list[float] = []
        for name in dir(inner):
            if not name.startswith("_") and name not in ("append_batch", "save_checkpoint"):
                value = getattr(inner, name, None)
                if callable(value):
                    setattr(self, name, value)
        inner_batch = getattr(inner, "append_batch", None)
        if inner_batch is not None:
            marks = self.marks

            def append_batch(run: Any, events: Any, checkpoint: Any = None) -> Any:
                if checkpoint is not None:
                    marks.append(time.perf_counter())
                return inner_batch(run, events, checkpoint)

            self.append_batch = append_batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def save_checkpoint(self, checkpoint: Any, event: Any) -> Any:
        """Mark, then hand back the store's own coroutine."""
        self.marks.append(time.perf_counter())
        return self.inner.save_checkpoint(checkpoint, event)


def step_row(marks: list[float], wall: float, cpu: float, steps: int) -> dict[str, float]:
    """Per-step wall and CPU time of a run, and the median step of its first and last tenth
    (``marks``: one time per loop step)."""
    deltas = [b - a for a, b in itertools.pairwise(marks)]
    tenth = max(1, len(deltas) // 10)
    return {
        "wall_us": wall / steps * 1e6,
        "cpu_us": cpu / steps * 1e6,
        "early_us": statistics.median(deltas[:tenth]) * 1e6 if deltas else 0.0,
        "late_us": statistics.median(deltas[-tenth:]) * 1e6 if deltas else 0.0,
    }


async def measure_loop(
    n: int,
    *,
    store: Any = None,
    tool: Any = None,
    arguments: Callable[[int], dict[str, Any]] | None = None,
    policy: LoopPolicy | None = None,
    trace_memory: bool = False,
) -> dict[str, float]:
    """One ``n``-step loop run: per-step wall/CPU µs, early/late step µs, peak MB.

    ``store`` defaults to a fresh :class:`InMemoryEventStore` and ``tool`` to
    :func:`echo_tool` (called with :func:`echo_arguments`), ``policy`` to
    :func:`default_policy`; a run that does not
    complete raises ``RuntimeError`` with its stop reason and error.
    """
    timed = TimedStore(store if store is not None else InMemoryEventStore())
    chosen = tool if tool is not None else echo_tool()
    name = getattr(chosen, "name", "echo")
    runtime = AgentRuntime(
        provider=FakeProvider(
            tool_loop_script(n, name, arguments or echo_arguments), record_requests=False
        ),
        tools=[chosen],
        policy=policy or default_policy(n),
        event_store=timed,
    )
    gc.collect()
    if trace_memory:
        tracemalloc.start()
    started, cpu_started = time.perf_counter(), time.process_time()
    result = await runtime.run("benchmark")
    cpu, wall = time.process_time() - cpu_started, time.perf_counter() - started
    peak = 0.0
    if trace_memory:
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    if result.status.value != "completed":
        stop = result.stop_reason.value if result.stop_reason else "-"
        raise RuntimeError(f"the benchmark run {result.status.value} ({stop}): {result.error}")
    # one tool step = the interval between successive post-tool checkpoints
    row = step_row(timed.marks[2::2], wall, cpu, n + 1)
    return {**row, "steps": n + 1, "peak_mb": peak}


__all__ = [
    "EchoArgs",
    "TimedStore",
    "default_policy",
    "echo_arguments",
    "echo_tool",
    "loop_policy",
    "measure_loop",
    "step_row",
    "tool_loop_script",
]
