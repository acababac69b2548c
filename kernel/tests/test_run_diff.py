"""``avo.run_diff``: the public diff API, across two stores and through a saved dict."""

from __future__ import annotations

import json

from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, ModelResponse, ToolCall
from avo.run_diff import RunFacts, diff_facts, diff_runs, run_facts
from avo.storage.memory import InMemoryEventStore


class NArgs(BaseModel):
    n: int = 0


ECHO = FunctionTool(
    name="echo", description="echo n", arguments_model=NArgs, function=lambda a: {"n": a.n}
)


def _script(second: int, answer: str) -> list[ModelResponse]:
    return [
        ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": 1})),
        ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": second})),
        ModelResponse(content=answer),
    ]


async def _one(store: InMemoryEventStore, second: int, answer: str) -> str:
    runtime = AgentRuntime(
        provider=FakeProvider(_script(second, answer)), tools=[ECHO], event_store=store
    )
    return (await runtime.run("task")).run_id


async def test_facts_from_two_stores_diff_like_one_store() -> None:
    left, right = InMemoryEventStore(), InMemoryEventStore()
    a = await _one(left, 2, "two")
    b = await _one(right, 3, "three")
    diff = diff_facts(await run_facts(left, a), await run_facts(right, b))
    assert not diff.same
    assert diff.differing_fields == ["output"]
    assert diff.first_tool_call_difference == 1
    assert diff.first_state_difference is None

    both = InMemoryEventStore()
    a2, b2 = await _one(both, 2, "two"), await _one(both, 3, "three")
    in_one = await diff_runs(both, a2, b2)
    assert in_one.differing_fields == diff.differing_fields
    assert in_one.first_tool_call_difference == diff.first_tool_call_difference


async def test_facts_survive_a_json_round_trip() -> None:
    store = InMemoryEventStore()
    run_id = await _one(store, 2, "two")
    facts = await run_facts(store, run_id)
    again = RunFacts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert again == facts
    assert diff_facts(facts, again).same
