"""avo.ops in-process: interrupt vs cancel, resume from a recorded composition, replay."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from avo import AgentRuntime, FakeProvider, FunctionTool, ModelResponse, ToolCall
from avo.compose import compose
from avo.events import AgentEvent, EventType
from avo.exceptions import RunAlreadyTerminalError, StorageError
from avo.models import ToolRisk
from avo.ops import cancel, replay, resume, steer
from avo.state import RunState, StopReason
from avo.storage.memory import InMemoryEventStore


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = 0.0


def _sleepy(started: asyncio.Event) -> FunctionTool[Args]:
    async def nap(args: Args) -> str:
        started.set()
        await asyncio.sleep(args.seconds)
        return "rested"

    return FunctionTool(
        name="nap", description="sleep", arguments_model=Args, function=nap, risk=ToolRisk.INSPECT
    )


def _call(seconds: float, call_id: str = "c1") -> ModelResponse:
    return ModelResponse(
        tool_call=ToolCall(tool_call_id=call_id, name="nap", arguments={"seconds": seconds})
    )


async def test_interrupt_pauses_the_run_and_resume_finishes_it() -> None:
    store = InMemoryEventStore()
    started = asyncio.Event()
    provider = FakeProvider([_call(60), ModelResponse(content="awake")])
    runtime = AgentRuntime(provider=provider, tools=[_sleepy(started)], event_store=store)
    driving = asyncio.ensure_future(runtime.run("nap", run_id="r1"))
    await started.wait()
    assert runtime.interrupt("SIGINT received")
    result = await driving
    assert result.status is RunState.PAUSED and result.stop_reason is None
    events = await store.get_events("r1")
    failed = [e for e in events if e.event_type is EventType.TOOL_FAILED]
    assert "SIGINT received" in str(failed[0].payload["error"])
    paused = [e for e in events if e.payload.get("to_state") == "paused"]
    assert paused[-1].payload["reason"] == "interrupted"
    assert not runtime.interrupt()  # nothing is being driven now
    done = await runtime.resume("r1")
    assert (done.status, done.output) == (RunState.COMPLETED, "awake")


async def test_cancelling_the_task_still_cancels_the_run() -> None:
    store = InMemoryEventStore()
    started = asyncio.Event()
    runtime = AgentRuntime(
        provider=FakeProvider([_call(60)]), tools=[_sleepy(started)], event_store=store
    )
    driving = asyncio.ensure_future(runtime.run("nap", run_id="r2"))
    await started.wait()
    driving.cancel()
    result = await driving
    assert (result.status, result.stop_reason) == (RunState.CANCELLED, StopReason.USER_CANCELLED)


async def test_ops_cancel_closes_an_interrupted_run() -> None:
    store = InMemoryEventStore()
    started = asyncio.Event()
    runtime = AgentRuntime(
        provider=FakeProvider([_call(60)]), tools=[_sleepy(started)], event_store=store
    )
    driving = asyncio.ensure_future(runtime.run("nap", run_id="r3"))
    await started.wait()
    runtime.interrupt()
    await driving
    result = await cancel(store, "r3", reason="no longer needed")
    assert (result.status, result.error) == (RunState.CANCELLED, "no longer needed")
    with pytest.raises(RunAlreadyTerminalError, match="nothing to cancel"):
        await cancel(store, "r3")


async def test_resume_composes_the_recorded_runtime(tmp_path: Any) -> None:
    config = tmp_path / "avo.toml"
    config.write_text(
        '[provider]\nname = "fake"\n[[provider.settings.script]]\ncontent = "recorded"\n'
        '[store]\nlocation = "memory:"\n[policy]\nmax_steps = 3\n',
        encoding="utf-8",
    )
    composition = compose(config, environ={})
    store = composition.event_store

    class Breaks:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
            if any(e.event_type is EventType.MODEL_RESPONDED for e in events):
                raise StorageError("crash")
            return await self.inner.append_batch(run, events, checkpoint)

    composition.runtime.event_store = Breaks(store)
    with pytest.raises(StorageError, match="crash"):
        await composition.runtime.run("go", run_id="r4")
    first = (await store.get_events("r4"))[0]
    record = first.payload["composition"]
    assert record["config"]["provider"]["name"] == "fake"
    assert record["config"]["policy"] == {"max_steps": 3}
    done = await resume(store, "r4", environ={})
    assert (done.status, done.output) == (RunState.COMPLETED, "recorded")


async def test_replay_matches_a_run_with_steering_and_reports_a_changed_event() -> None:
    store = InMemoryEventStore()
    started = asyncio.Event()
    runtime: AgentRuntime | None = None

    async def post_while_working(args: Args) -> str:
        started.set()
        assert runtime is not None
        steer("r5", "use the staging database", runtime=runtime, source="test")
        return "ok"

    tool = FunctionTool(
        name="nap",
        description="sleep",
        arguments_model=Args,
        function=post_while_working,
        risk=ToolRisk.INSPECT,
    )
    provider = FakeProvider([_call(0), ModelResponse(content="done")])
    runtime = AgentRuntime(provider=provider, tools=[tool], event_store=store)
    await runtime.run("work", run_id="r5")
    events = await store.get_events("r5")
    assert any(e.event_type is EventType.RUN_STEERED for e in events)
    report = await replay(store, "r5")
    assert report.ok, report.divergence
    # a recorded tool call that today's code would not make: the first divergent event
    tampered = InMemoryEventStore()
    run = await store.get_run("r5")
    assert run is not None
    for index, event in enumerate(events):
        payload = dict(event.payload)
        if event.event_type is EventType.MODEL_RESPONDED and payload["step"] == 1:
            response = dict(payload["response"])  # type: ignore[arg-type]
            call = dict(response["tool_calls"][0])
            call["arguments"] = {"seconds": 5.0}
            response["tool_calls"] = [call]
            payload["response"] = response
        copy = AgentEvent(run_id="r5", event_type=event.event_type, payload=payload, sequence=0)
        if index == 0:
            await tampered.create_run(
                run.model_copy(update={"state": RunState.CREATED, "stop_reason": None}), copy
            )
        else:
            await tampered.append_event(copy)
    changed = await replay(tampered, "r5")
    assert not changed.ok and changed.divergence is not None
    assert changed.divergence.recorded is not None
    assert changed.divergence.recorded["type"] == "tool_requested"
    assert "arguments" in changed.divergence.detail


async def test_interrupting_parallel_calls_closes_each_and_resumes() -> None:
    store = InMemoryEventStore()
    started = asyncio.Event()
    both = ModelResponse(
        tool_calls=[
            ToolCall(tool_call_id="a", name="nap", arguments={"seconds": 60}),
            ToolCall(tool_call_id="b", name="nap", arguments={"seconds": 60}),
        ]
    )
    runtime = AgentRuntime(
        provider=FakeProvider([both, ModelResponse(content="both cut")]),
        tools=[_sleepy(started)],
        event_store=store,
    )
    driving = asyncio.ensure_future(runtime.run("two naps", run_id="r6"))
    await started.wait()
    await asyncio.sleep(0.05)
    runtime.interrupt("SIGTERM received")
    assert (await driving).status is RunState.PAUSED
    failed = [e for e in await store.get_events("r6") if e.event_type is EventType.TOOL_FAILED]
    assert len(failed) == 2
    done = await runtime.resume("r6")
    assert (done.status, done.output) == (RunState.COMPLETED, "both cut")
    report = await replay(store, "r6")
    assert report.ok, report.divergence
