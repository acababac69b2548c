"""``avo.ops.compare_runs``: the runs-diff facts plus the first divergent event."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, ModelResponse, ToolCall
from avo.events import EventType
from avo.exceptions import RunNotFoundError
from avo.ops import compare_runs
from avo.storage.memory import InMemoryEventStore


class NArgs(BaseModel):
    n: int = 0


ECHO = FunctionTool(
    name="echo", description="echo n", arguments_model=NArgs, function=lambda a: {"n": a.n}
)


async def _run(store: InMemoryEventStore, second: int, answer: str, task: str = "task") -> str:
    script = [
        ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": 1})),
        ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": second})),
        ModelResponse(content=answer),
    ]
    runtime = AgentRuntime(provider=FakeProvider(script), tools=[ECHO], event_store=store)
    return (await runtime.run(task)).run_id


async def test_two_runs_of_the_same_script_do_not_diverge() -> None:
    store = InMemoryEventStore()
    a, b = await _run(store, 2, "done"), await _run(store, 2, "done")
    comparison = await compare_runs(store, a, b)
    assert comparison.divergence is None
    assert comparison.diff.same


async def test_the_first_different_argument_is_pinned_to_its_events() -> None:
    store = InMemoryEventStore()
    a, b = await _run(store, 2, "done"), await _run(store, 3, "done")
    comparison = await compare_runs(store, a, b)
    divergence = comparison.divergence
    assert divergence is not None
    assert divergence.sequence_a == divergence.sequence_b
    events = {e.sequence: e for e in await store.get_events(a)}
    assert events[divergence.sequence_a].event_type is EventType.MODEL_RESPONDED
    assert events[divergence.sequence_a].payload["step"] == 2
    assert divergence.key == "response.tool_calls"
    assert comparison.diff.first_tool_call_difference == 1  # what `avo runs diff` says


async def test_different_tasks_diverge_at_the_first_event() -> None:
    store = InMemoryEventStore()
    a, b = await _run(store, 2, "done", "one"), await _run(store, 2, "done", "two")
    divergence = (await compare_runs(store, a, b)).divergence
    assert divergence is not None and divergence.index == 0 and divergence.key == "task"


async def test_a_missing_run_is_named() -> None:
    store = InMemoryEventStore()
    a = await _run(store, 2, "done")
    with pytest.raises(RunNotFoundError, match="'nope' was not found"):
        await compare_runs(store, a, "nope")
