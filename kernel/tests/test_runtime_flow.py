"""A tool-calling run: event order and payloads, approval, hooks, timeouts, streaming."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from avo import (
    AgentRuntime,
    EventType,
    FakeProvider,
    FunctionTool,
    LoopPolicy,
    ModelResponse,
    RunState,
    StopReason,
    ToolCall,
)
from avo.hooks import HookDecision, HookEvent, HookRegistry, make_logging_hook
from avo.memory import InMemoryMemoryStore, LetheMemoryAdapter
from avo.storage.memory import InMemoryEventStore


async def test_event_order_and_payloads(call: Any, answer: Any, echo_tool: Any) -> None:
    provider = FakeProvider(
        [call(call_id="c1", text="hi", n=1), answer("bye", input_tokens=5, output_tokens=2)]
    )
    runtime = AgentRuntime(provider=provider, tools=[echo_tool])
    result = await runtime.run("greet", system_prompt="You are terse.")
    events = await runtime.event_store.get_events(result.run_id)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert [e.event_type.value for e in events] == [
        "run_created",
        "state_changed",  # created -> model_pending
        "checkpoint_created",
        "model_responded",
        "state_changed",  # -> decision_received
        "checkpoint_created",
        "tool_requested",
        "state_changed",  # -> tool_pending
        "tool_approval_requested",
        "state_changed",  # -> approval_pending
        "tool_approved",
        "state_changed",  # -> tool_executing
        "tool_started",
        "tool_completed",
        "state_changed",  # -> observation_recorded
        "checkpoint_created",
        "state_changed",  # -> model_pending
        "model_responded",
        "state_changed",  # -> decision_received
        "checkpoint_created",
        "checkpoint_created",  # terminate forces one
        "state_changed",  # -> completed
        "run_completed",
    ]
    created = events[0].payload
    assert created["task"] == "greet" and created["policy"]["max_steps"] == 20
    transitions = [
        (e.payload["from_state"], e.payload["to_state"])
        for e in events
        if e.event_type is EventType.STATE_CHANGED
    ]
    assert transitions[0] == ("created", "model_pending")
    assert transitions[-1] == ("decision_received", "completed")
    responded = events[3].payload
    assert responded["step"] == 1 and responded["provider"] == "fake"
    [decided] = responded["response"]["tool_calls"]
    assert decided["name"] == "echo"
    # The kernel mints the call's id; the script's (the vendor's) id is kept beside it.
    call_id = decided["tool_call_id"]
    assert decided["vendor_id"] == "c1" and call_id != "c1"
    approval = events[8].payload
    assert approval == {
        "tool_call_id": call_id,
        "idempotency_key": f"{result.run_id}:{call_id}",
        "name": "echo",
        "mode": "v0.1_callback",
    }
    completed = events[13].payload
    assert completed["result"]["output"] == {"echo": "hi", "n": 1}
    terminal = events[-1].payload
    assert terminal["state"] == "completed" and terminal["output"] == "bye"
    assert terminal["token_usage"] == {"input_tokens": 5, "output_tokens": 2}
    first_request = provider.requests[0]
    assert [m["role"] for m in first_request.messages] == ["system", "user"]
    second = provider.requests[1].messages
    assert second[-2]["tool_calls"][0]["function"]["name"] == "echo"  # type: ignore[index]
    assert second[-2]["tool_calls"][0]["vendor_id"] == "c1"  # type: ignore[index]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == call_id
    assert second[-1]["vendor_id"] == "c1"
    assert provider.requests[0].tools[0].name == "echo"


async def test_async_approval_callback(call: Any, answer: Any, echo_tool: Any) -> None:
    seen: list[str] = []

    async def approve(c: ToolCall) -> bool:
        await asyncio.sleep(0)
        seen.append(c.name)
        return True

    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1), answer()]), tools=[echo_tool], approval_callback=approve
    )
    result = await runtime.run("t")
    assert result.status is RunState.COMPLETED and seen == ["echo"]


async def test_hooks_fire_and_can_modify_arguments(
    call: Any, answer: Any, echo_tool: Any, effects: list[Any]
) -> None:
    sink: list[Any] = []
    hooks = HookRegistry()
    hooks.register(HookEvent.PRE_TOOL_USE, lambda ctx: HookDecision(modified_args={"n": 42}))
    hooks.register(HookEvent.POST_TOOL_USE, make_logging_hook(sink))
    hooks.register(HookEvent.STOP, make_logging_hook(sink))
    # A raising after-hook is contained (and reported); a raising guard would deny the call.
    hooks.register(HookEvent.POST_TOOL_USE, lambda ctx: 1 / 0)
    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1), answer()]), tools=[echo_tool], hooks=hooks
    )
    result = await runtime.run("t")
    assert result.status is RunState.COMPLETED
    assert effects == [{"text": "", "n": 42}]
    assert [s[0] for s in sink] == ["post_tool_use", "stop"]
    events = await runtime.event_store.get_events(result.run_id)
    approved = next(e for e in events if e.event_type is EventType.TOOL_APPROVED)
    assert approved.payload["arguments"] == {"n": 42}
    [fault] = [e for e in events if e.event_type is EventType.HOOK_FAILED]
    assert fault.payload["event"] == "post_tool_use" and fault.payload["outcome"] == "ignored"


async def test_tool_timeout_becomes_a_failed_result(call: Any, answer: Any) -> None:
    class A(BaseModel):
        n: int

    async def slow(args: A) -> None:
        await asyncio.sleep(5)

    tool = FunctionTool(name="slow", description="Slow.", arguments_model=A, function=slow)
    runtime = AgentRuntime(
        provider=FakeProvider([call("slow", n=1), answer()]),
        tools=[tool],
        policy=LoopPolicy(tool_timeout_seconds=0.05),
    )
    result = await runtime.run("t")
    assert result.status is RunState.COMPLETED
    events = await runtime.event_store.get_events(result.run_id)
    failed = next(e.payload for e in events if e.event_type is EventType.TOOL_FAILED)
    assert failed["error"] == "Tool 'slow' exceeded the configured timeout of 0.05 seconds."


async def test_provider_timeout_is_a_retryable_provider_error(answer: Any) -> None:
    class Slow(FakeProvider):
        async def generate(self, request: Any) -> ModelResponse:
            if self.cursor == 0:
                self.cursor += 1
                await asyncio.sleep(5)
            return await super().generate(request)

    runtime = AgentRuntime(
        provider=Slow([answer("late"), answer("ok")]),
        policy=LoopPolicy(provider_timeout_seconds=0.05),
    )
    result = await runtime.run("t")
    assert result.output == "ok"
    events = await runtime.event_store.get_events(result.run_id)
    failed = next(e.payload for e in events if e.event_type is EventType.MODEL_FAILED)
    assert failed["error"] == "Provider call exceeded the configured timeout of 0.05 seconds."
    assert failed["retryable"] is True


async def test_streaming_assembles_equal_to_generate(call: Any, echo_tool: Any) -> None:
    script = [
        call(call_id="c1", text="x", n=1),
        ModelResponse.model_validate(
            {
                "content": "<think>hmm</think>The answer.",
                "usage": {"input_tokens": 3, "output_tokens": 4},
            }
        ),
    ]
    plain = AgentRuntime(provider=FakeProvider(script), tools=[echo_tool])
    chunks: list[str] = []
    streamed = AgentRuntime(
        provider=FakeProvider(script), tools=[echo_tool], stream_callback=chunks.append
    )
    a = await plain.run("t")
    b = await streamed.run("t")
    assert (a.output, a.token_usage, a.steps) == (b.output, b.token_usage, b.steps)
    assert "".join(chunks) == "The answer." or "".join(chunks) == b.output
    ev_a = await plain.event_store.get_events(a.run_id)
    ev_b = await streamed.event_store.get_events(b.run_id)
    assert [e.event_type for e in ev_a] == [e.event_type for e in ev_b]


async def test_memory_recall_seam(answer: Any) -> None:
    store = InMemoryMemoryStore()
    memory = LetheMemoryAdapter(store)
    await memory.aremember_output("the user prefers tabs", session_id="s")
    provider = FakeProvider([answer()])
    await AgentRuntime(provider=provider, memory=memory).run("tabs or spaces")
    messages = provider.requests[0].messages
    assert messages[0]["role"] == "system"
    assert str(messages[0]["content"]).startswith("Relevant memories:")
    assert messages[-1] == {"role": "user", "content": "tabs or spaces"}


async def test_plugin_lifecycle_hooks_and_budget_seam(call: Any, echo_tool: Any) -> None:
    import pluggy

    from avo import hookspecs

    seen: list[str] = []

    class Watcher:
        @hookspecs.hookimpl
        def avo_run_started(self, run_id: str, task: str) -> None:
            seen.append("started")

        @hookspecs.hookimpl
        def avo_event_appended(self, event: Any) -> None:
            seen.append(event.event_type.value)

        @hookspecs.hookimpl
        def avo_run_finished(self, run_id: str, result: Any) -> None:
            seen.append(f"finished:{result.stop_reason.value}")

    pm = pluggy.PluginManager("avo")
    pm.add_hookspecs(hookspecs)
    pm.register(Watcher())

    class Decision:
        exceeded_hard_limit = True
        spent_usd = "1.50"

    class Budget:
        def check(self, total: Any) -> Decision:
            return Decision()

    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1)]), tools=[echo_tool], plugins=pm, budget=Budget()
    )
    result = await runtime.run("t")
    assert result.stop_reason is StopReason.TOKEN_BUDGET_EXCEEDED
    assert seen[0] == "started" and seen[1] == "run_created"
    assert seen[-1] == "finished:token_budget_exceeded" and "policy_triggered" in seen
    events = await runtime.event_store.get_events(result.run_id)
    assert (
        next(e.payload for e in events if e.event_type is EventType.POLICY_TRIGGERED)["policy"]
        == "budget"
    )


async def test_provider_event_sink_records_route_failover(answer: Any) -> None:
    class Router(FakeProvider):
        event_sink: Any = None

        async def generate(self, request: Any) -> ModelResponse:
            await self.event_sink(EventType.ROUTE_FAILOVER, {"from": "a", "to": "b"})
            return await super().generate(request)

    runtime = AgentRuntime(provider=Router([answer()]))
    result = await runtime.run("t")
    events = await runtime.event_store.get_events(result.run_id)
    assert [e.payload for e in events if e.event_type is EventType.ROUTE_FAILOVER] == [
        {"from": "a", "to": "b"}
    ]


async def test_runs_on_one_runtime_are_serialised(answer: Any) -> None:
    runtime = AgentRuntime(
        provider=FakeProvider([answer("a"), answer("b")]), event_store=InMemoryEventStore()
    )
    first, second = await asyncio.gather(runtime.run("one"), runtime.run("two"))
    assert {first.output, second.output} == {"a", "b"}
    assert len(await runtime.event_store.list_runs()) == 2


async def test_prompt_cache_flag_marks_requests(answer: Any) -> None:
    provider = FakeProvider([answer()])
    await AgentRuntime(provider=provider, prompt_cache=True).run("t", system_prompt="sys")
    request = provider.requests[0]
    assert request.cache is True and request.cache_prefix_messages == 1
    plain = FakeProvider([answer()])
    await AgentRuntime(provider=plain).run("t")
    assert plain.requests[0].cache is False and plain.requests[0].cache_prefix_messages is None


async def test_tools_registered_later_are_advertised(answer: Any, echo_tool: Any) -> None:
    provider = FakeProvider([answer()])
    runtime = AgentRuntime(provider=provider)
    runtime.tools.register(echo_tool)
    await runtime.run("t")
    assert [tool.name for tool in provider.requests[0].tools] == ["echo"]
    assert runtime.approval_callback(ToolCall(name="echo")) is True


async def test_blocking_sync_tool_runs_off_the_loop(call: Any, answer: Any) -> None:
    import time

    class A(BaseModel):
        n: int

    def block(args: A) -> None:
        time.sleep(0.6)  # a blocking call: must not stall the loop or beat the timeout

    tool = FunctionTool(name="block", description="Blocks.", arguments_model=A, function=block)
    ticks: list[float] = []

    async def ticker() -> None:
        for _ in range(5):
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.02)

    runtime = AgentRuntime(
        provider=FakeProvider([call("block", n=1), answer()]),
        tools=[tool],
        policy=LoopPolicy(tool_timeout_seconds=0.2),
    )
    result, _ = await asyncio.gather(runtime.run("t"), ticker())
    events = await runtime.event_store.get_events(result.run_id)
    failed = next(e.payload for e in events if e.event_type is EventType.TOOL_FAILED)
    assert "exceeded the configured timeout of 0.2 seconds" in failed["error"]
    assert len(ticks) == 5 and ticks[-1] - ticks[0] < 0.5  # the loop kept ticking


async def test_injected_environ_secrets_are_masked_in_events(answer: Any) -> None:
    provider = FakeProvider([answer("the token is hunter2-hunter2")])
    runtime = AgentRuntime(provider=provider, environ={"DB_PASSWORD": "hunter2-hunter2"})
    result = await runtime.run("t")
    events = await runtime.event_store.get_events(result.run_id)
    assert "hunter2-hunter2" not in str([e.payload for e in events]) + str(result.output)
