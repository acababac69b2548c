"""The plugin-author kit's scripted FakeProvider builders drive a real runtime."""

from __future__ import annotations

from pydantic import BaseModel

from avo.exceptions import ProviderError
from avo.policies import LoopPolicy
from avo.runtime import AgentRuntime
from avo.testing import (
    always_calling,
    answer,
    failing_then_answer,
    scripted,
    tool_call,
    tool_calls_then_answer,
    tool_then_answer,
)
from avo.tools import FunctionTool


class Args(BaseModel):
    n: int = 0


def _double() -> FunctionTool[Args]:
    return FunctionTool(
        name="double", description="Double n.", arguments_model=Args, function=lambda a: a.n * 2
    )


async def test_tool_then_answer_and_usage() -> None:
    provider = tool_then_answer("double", {"n": 4}, "eight", usage=(3, 1))
    result = await AgentRuntime(provider=provider, tools=[_double()]).run("double 4")
    assert (result.output, result.steps) == ("eight", 2)
    assert result.token_usage.total_tokens == 8


async def test_tool_calls_then_answer_runs_each_call() -> None:
    provider = tool_calls_then_answer([("double", {"n": 1}), ("double", {"n": 2})], "done")
    runtime = AgentRuntime(provider=provider, tools=[_double()])
    result = await runtime.run("twice")
    events = await runtime.event_store.get_events(result.run_id)
    outputs = [e.payload for e in events if e.event_type.value == "tool_completed"]
    assert len(outputs) == 2 and result.output == "done"


async def test_always_calling_is_stopped_by_a_policy() -> None:
    runtime = AgentRuntime(
        provider=always_calling("double", {"n": 1}),
        tools=[_double()],
        policy=LoopPolicy(max_steps=6),
    )
    result = await runtime.run("loop")
    assert result.status.value == "stopped"


async def test_failing_then_answer_and_building_blocks() -> None:
    provider = failing_then_answer(ProviderError("flaky", retryable=True), "recovered")
    result = await AgentRuntime(provider=provider).run("try")
    assert result.output == "recovered"
    assert tool_call("x", call_id="c1").tool_call is not None
    assert scripted(answer("a"), answer("b")).cursor == 0
