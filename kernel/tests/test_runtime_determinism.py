"""The loop decides alike given the same effects: one log, byte for byte, every time.

An engine that replays a run's decisions (a Temporal workflow re-executed on
another worker) relies on this: everything the loop reads that varies between
executions comes through the runtime (``clock``, ``timer``, ``event_ids``,
``call_ids``, ``random``, ``sleep``), and the effects (model responses, tool
results) are handed back as they were first recorded. Two executions with the
same sources and the same effects must write identical events and checkpoints.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FunctionTool, LoopPolicy
from avo.approval import Answer, Approval
from avo.exceptions import ProviderError
from avo.models import ToolCall, ToolResult, ToolRisk
from avo.storage.memory import InMemoryEventStore
from avo.testing import answer, parallel_calls, scripted, tool_call
from avo.tools import ToolRegistry

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class _Args(BaseModel):
    n: int


def _tools() -> list[FunctionTool[_Args]]:
    def echo(args: _Args) -> dict[str, int]:
        return {"n": args.n}

    return [
        FunctionTool(
            name="read",
            description="read n",
            arguments_model=_Args,
            function=echo,
            risk=ToolRisk.INSPECT,
            run_in_thread=False,
        ),
        FunctionTool(
            name="write",
            description="write n",
            arguments_model=_Args,
            function=echo,
            risk=ToolRisk.MODIFY,
            run_in_thread=False,
        ),
    ]


class _RecordedTools(ToolRegistry):
    """Tools run elsewhere, their results handed back as recorded (fixed readings)."""

    async def invoke(self, call: ToolCall, *, completed_tool_call_ids: set[str]) -> ToolResult:
        result = await super().invoke(call, completed_tool_call_ids=completed_tool_call_ids)
        return result.model_copy(update={"started_at": T0, "finished_at": T0, "duration_ms": 1.0})


async def _no_wait(seconds: float) -> None:
    return None


# The model's responses are effects too: made once, handed back alike to both executions.
SCRIPT = (
    tool_call("read", {"n": 1}),
    ProviderError("overloaded", retryable=True, status_code=529),
    parallel_calls(("read", {"n": 2}), ("read", {"n": 3}), ("write", {"n": 4})),
    answer("done", usage=(10, 2)),
)


def _runtime(store: InMemoryEventStore, approval: Any = None) -> AgentRuntime:
    rt = AgentRuntime(
        provider=scripted(*SCRIPT),
        tools=_RecordedTools(_tools()),
        event_store=store,
        policy=LoopPolicy(max_steps=10, max_runtime_seconds=None),
        approval_callback=approval,
        environ={},
    )
    ticks, events, calls, timer = (itertools.count() for _ in range(4))
    rt.clock = lambda: T0 + timedelta(milliseconds=next(ticks))
    rt.event_ids = lambda: f"event-{next(events)}"
    rt.call_ids = lambda: f"call-{next(calls)}"
    rt.timer = lambda: float(next(timer))
    rt.random = lambda: 0.5
    rt.sleep = _no_wait
    return rt


async def _log(store: InMemoryEventStore, run_id: str) -> list[dict[str, Any]]:
    events = [e.model_dump(mode="json") for e in await store.get_events(run_id)]
    checkpoint = await store.get_latest_checkpoint(run_id)
    assert checkpoint is not None
    return [*events, checkpoint.model_dump(mode="json")]


@pytest.mark.asyncio
async def test_two_executions_with_the_same_sources_write_the_same_log() -> None:
    logs = []
    for _ in range(2):
        store = InMemoryEventStore()
        result = await _runtime(store).run("count", run_id="run-1")
        assert result.status.value == "completed" and result.output == "done"
        logs.append(await _log(store, "run-1"))
    assert logs[0] == logs[1]
    kinds = [entry.get("event_type") for entry in logs[0]]
    assert "model_failed" in kinds and kinds.count("tool_completed") == 4


@pytest.mark.asyncio
async def test_a_pause_and_a_resume_with_an_answer_are_deterministic_too() -> None:
    def ask_for_writes(call: ToolCall) -> Approval:
        return Approval.ask("writes need a person") if call.name == "write" else Approval.allow()

    logs = []
    for _ in range(2):
        store = InMemoryEventStore()
        paused = await _runtime(store, ask_for_writes).run("count", run_id="run-1")
        assert paused.status.value == "paused"
        resumer = _runtime(store, ask_for_writes)
        write_id = next(
            str(e.payload["tool_call_id"])
            for e in await store.get_events("run-1")
            if e.event_type.value == "human_input_requested"
        )
        answers = {write_id: Answer.approve("fine", by="tester")}
        result = await resumer.resume("run-1", answers=answers, lease=False)
        assert result.status.value == "completed"
        logs.append(await _log(store, "run-1"))
    assert logs[0] == logs[1]


async def test_derive_builds_a_sibling_with_other_parts() -> None:
    policy = LoopPolicy(max_steps=7)
    original = AgentRuntime(provider=scripted(answer("one")), policy=policy)
    original.composition = {"provider": {"name": "fake"}}
    original.engine = {"name": "relay", "settings": {}}
    store = InMemoryEventStore()
    sibling = original.derive(provider=scripted(answer("two")), event_store=store)
    assert sibling.policy is policy
    assert sibling.event_store is store
    assert sibling.composition == {"provider": {"name": "fake"}}
    assert sibling.engine == {"name": "relay", "settings": {}}
    result = await sibling.run("go")
    assert result.output == "two"
    assert await original.event_store.get_run(result.run_id) is None
    with pytest.raises(TypeError, match="unknown arguments \\['provder'\\]"):
        original.derive(provder=None)
