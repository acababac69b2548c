"""avo.ops.steer: a message posted while a run works joins it before the next model call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from avo import AgentRuntime, EventType, FakeProvider, RunState
from avo.exceptions import SteeringError
from avo.models import ModelRequest
from avo.ops import steer
from avo.storage.memory import InMemoryEventStore


class Paced(FakeProvider):
    """Waits for a signal before its first answer, so a message can arrive meanwhile."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script)
        self.waiting = asyncio.Event()
        self.go = asyncio.Event()

    async def generate(self, request: ModelRequest) -> Any:
        if not self.go.is_set():
            self.waiting.set()
            await self.go.wait()
        return await super().generate(request)


async def test_a_message_posted_mid_run_reaches_the_next_call(
    call: Any, answer: Any, echo_tool: Any
) -> None:
    provider = Paced([call("echo", text="a"), answer()])
    store = InMemoryEventStore()
    runtime = AgentRuntime(provider=provider, tools=[echo_tool], event_store=store)
    task = asyncio.create_task(runtime.run("task", run_id="r1"))
    await provider.waiting.wait()
    ticket = steer("r1", "also check the tests", source="chat")
    assert not ticket.delivered
    provider.go.set()
    result = await task
    assert result.status is RunState.COMPLETED
    assert ticket.delivered and ticket.delivered_step == 2
    second = provider.requests[1]
    assert second.messages[-1] == {"role": "user", "content": "also check the tests"}
    events = await store.get_events("r1")
    steered = [e for e in events if e.event_type is EventType.RUN_STEERED]
    assert len(steered) == 1
    payload = steered[0].payload
    assert (payload["message"], payload["source"], payload["step"]) == (
        "also check the tests",
        "chat",
        2,
    )
    assert payload["message_id"] == ticket.message_id
    cp = await store.get_latest_checkpoint("r1")
    assert cp is not None
    assert {"role": "user", "content": "also check the tests"} in cp.messages


async def test_steering_through_the_runtime_and_from_a_tool(call: Any, answer: Any) -> None:
    from pydantic import BaseModel

    from avo import FunctionTool

    class NoArgs(BaseModel):
        pass

    runtime_box: list[AgentRuntime] = []

    def nudge(args: NoArgs) -> str:
        steer("r2", "stop after this", runtime=runtime_box[0])
        return "ok"

    tool = FunctionTool(name="nudge", description="n", arguments_model=NoArgs, function=nudge)
    provider = FakeProvider([call("nudge"), answer()])
    runtime = AgentRuntime(provider=provider, tools=[tool])
    runtime_box.append(runtime)
    await runtime.run("task", run_id="r2")
    assert provider.requests[1].messages[-1]["content"] == "stop after this"


async def test_only_a_working_run_can_be_steered(answer: Any) -> None:
    with pytest.raises(SteeringError, match="run 'nope' is not working in this process"):
        steer("nope", "hello")
    runtime = AgentRuntime(provider=FakeProvider([answer()]))
    await runtime.run("t", run_id="done-run")
    with pytest.raises(SteeringError, match="is not working in this process"):
        steer("done-run", "too late")
    with pytest.raises(SteeringError, match="must be non-empty text"):
        steer("done-run", "   ")


async def test_the_trace_shows_the_message(call: Any, answer: Any, echo_tool: Any) -> None:
    provider = Paced([call("echo", text="a"), answer()])
    runtime = AgentRuntime(provider=provider, tools=[echo_tool])
    task = asyncio.create_task(runtime.run("task", run_id="r3"))
    await provider.waiting.wait()
    steer("r3", "hurry up", source="web")
    provider.go.set()
    await task
    trace = await runtime.inspect("r3")
    (entry,) = [e for e in trace.entries if e.event_type is EventType.RUN_STEERED]
    assert entry.summary == "steered (web): hurry up"


async def test_a_message_for_a_run_about_to_resume_reaches_its_first_call(
    call: Any, answer: Any, echo_tool: Any
) -> None:
    provider = Paced([call("echo", text="a"), answer("resumed")])
    store = InMemoryEventStore()
    runtime = AgentRuntime(provider=provider, tools=[echo_tool], event_store=store)
    task = asyncio.create_task(runtime.run("task", run_id="r5"))
    await provider.waiting.wait()
    assert runtime.interrupt("the user pressed Ctrl-C")
    assert (await task).status.value == "paused"
    with pytest.raises(SteeringError, match="is not working in this process"):
        steer("r5", "use the tests too", runtime=runtime)
    ticket = steer("r5", "use the tests too", runtime=runtime, source="chat", on_resume=True)
    provider.go.set()
    result = await runtime.resume("r5")
    assert result.output == "resumed" and ticket.delivered
    assert provider.requests[0].messages[-1]["content"] == "use the tests too"
    events = await store.get_events("r5")
    assert [e.payload["source"] for e in events if e.event_type is EventType.RUN_STEERED] == [
        "chat"
    ]


def test_steering_on_resume_needs_the_runtime() -> None:
    with pytest.raises(SteeringError, match="needs the runtime that will resume it"):
        steer("r4", "hello", on_resume=True)
