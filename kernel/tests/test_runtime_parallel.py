"""Parallel tool calls: a model turn may ask for several calls; each gets exactly one result.

Approvals are asked in the model's order before any call runs; inspect-only
calls run concurrently (up to max_parallel_tool_calls); a call that may modify
or execute is a barrier; results reach the transcript in the model's order,
including denied calls and calls a stopping run never ran.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, FunctionTool, LoopPolicy, RunState
from avo.hooks import HookContext, HookDecision, HookEvent, HookRegistry
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.state import StopReason
from avo.storage.memory import InMemoryEventStore
from avo.testing import minted_ids, parallel_calls


class Key(BaseModel):
    key: str


class Journal:
    """What the tools did, in order: ``start k`` / ``end k`` lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.running = 0
        self.most = 0
        self.gates: dict[str, asyncio.Event] = {}

    def tool(self, name: str, risk: ToolRisk | None, delay: float = 0.0) -> FunctionTool[Key]:
        async def run(args: Key) -> dict[str, str]:
            self.lines.append(f"start {args.key}")
            self.running += 1
            self.most = max(self.most, self.running)
            gate = self.gates.get(args.key)
            if gate is not None:
                await asyncio.wait_for(gate.wait(), 5)
            await asyncio.sleep(delay)
            self.running -= 1
            self.lines.append(f"end {args.key}")
            return {"done": args.key}

        return FunctionTool(
            name=name, description=f"{name} a key", arguments_model=Key, function=run, risk=risk
        )


def turn(*calls: tuple[str, str]) -> ModelResponse:
    return parallel_calls(*((name, {"key": key}) for name, key in calls))


def tools(journal: Journal) -> list[FunctionTool[Key]]:
    return [
        journal.tool("look", ToolRisk.INSPECT, delay=0.01),
        journal.tool("write", ToolRisk.MODIFY),
        journal.tool("anything", None),  # undeclared: treated as EXECUTE, a barrier
    ]


async def run_script(
    script: list[ModelResponse], journal: Journal, **kwargs: Any
) -> tuple[Any, list[Any], AgentRuntime]:
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=FakeProvider(script), tools=tools(journal), event_store=store, **kwargs
    )
    result = await runtime.run("go")
    return result, await store.get_events(result.run_id), runtime


def tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") == "tool"]


async def final_messages(runtime: AgentRuntime, run_id: str) -> list[dict[str, Any]]:
    checkpoint = await runtime.event_store.get_latest_checkpoint(run_id)
    assert checkpoint is not None
    return checkpoint.messages


async def test_three_calls_one_barrier_give_three_results_in_order() -> None:
    journal = Journal()
    script = [turn(("look", "a"), ("write", "b"), ("look", "c")), ModelResponse(content="ok")]
    result, events, runtime = await run_script(script, journal)
    assert result.status is RunState.COMPLETED and result.steps == 2
    # The barrier starts after the call before it finished and ends before the next starts.
    assert journal.lines == ["start a", "end a", "start b", "end b", "start c", "end c"]
    [responded, _] = [e for e in events if e.event_type is EventType.MODEL_RESPONDED]
    ids = [call["tool_call_id"] for call in responded.payload["response"]["tool_calls"]]
    for kind in (
        EventType.TOOL_REQUESTED,
        EventType.TOOL_APPROVAL_REQUESTED,
        EventType.TOOL_APPROVED,
        EventType.TOOL_STARTED,
        EventType.TOOL_COMPLETED,
    ):
        assert [e.payload["tool_call_id"] for e in events if e.event_type is kind] == ids
    # One assistant message lists the calls; one tool message per call follows, in order.
    messages = await final_messages(runtime, result.run_id)
    calls_message = next(m for m in messages if m.get("tool_calls"))
    assert [c["id"] for c in calls_message["tool_calls"]] == ids
    assert [m["tool_call_id"] for m in tool_messages(messages)] == ids
    # the next request carried them all
    request = runtime.provider.requests[1]  # type: ignore[attr-defined]
    assert [m["role"] for m in request.messages[-4:]] == ["assistant", "tool", "tool", "tool"]
    # one state pass per batch, two checkpoints per step as before
    states = [e.payload["to_state"] for e in events if e.event_type is EventType.STATE_CHANGED]
    assert states.count("tool_executing") == 1


async def test_inspect_only_calls_run_concurrently() -> None:
    journal = Journal()
    # a waits for b to start: only possible when they run at the same time
    journal.gates["a"] = asyncio.Event()

    async def open_gate(args: Key) -> dict[str, str]:
        journal.lines.append(f"start {args.key}")
        journal.gates["a"].set()
        return {"done": args.key}

    opener = FunctionTool(
        name="open", description="open", arguments_model=Key, function=open_gate, risk="inspect"
    )
    script = [turn(("look", "a"), ("open", "b")), ModelResponse(content="ok")]
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=FakeProvider(script), tools=[*tools(journal), opener], event_store=store
    )
    result = await runtime.run("go")
    assert result.status is RunState.COMPLETED, result.error
    assert journal.lines[:2] == ["start a", "start b"]
    # results recorded as they arrived (b first), the transcript keeps the model's order
    events = await store.get_events(result.run_id)
    done = [e.payload["name"] for e in events if e.event_type is EventType.TOOL_COMPLETED]
    assert done == ["open", "look"]
    messages = await final_messages(runtime, result.run_id)
    assert [m["name"] for m in tool_messages(messages)] == ["look", "open"]


@pytest.mark.parametrize(("limit", "most"), [(1, 1), (2, 2), (4, 4), (8, 5)])
async def test_concurrency_is_capped(limit: int, most: int) -> None:
    journal = Journal()
    script = [turn(*(("look", str(i)) for i in range(5))), ModelResponse(content="ok")]
    result, _, _ = await run_script(
        script, journal, policy=LoopPolicy(max_parallel_tool_calls=limit)
    )
    assert result.status is RunState.COMPLETED
    assert journal.most == most
    assert sorted(line for line in journal.lines if line.startswith("end")) == [
        f"end {i}" for i in range(5)
    ]


async def test_undeclared_risk_is_a_barrier() -> None:
    journal = Journal()
    script = [turn(("look", "a"), ("anything", "b"), ("look", "c")), ModelResponse(content="ok")]
    await run_script(script, journal)
    assert journal.lines == ["start a", "end a", "start b", "end b", "start c", "end c"]


async def test_approvals_are_asked_in_order_before_any_call_runs() -> None:
    journal = Journal()
    asked: list[str] = []

    def approve(call: ToolCall) -> bool:
        asked.append(f"{call.arguments['key']} (ran: {len(journal.lines)})")
        return True

    script = [turn(("look", "a"), ("write", "b"), ("look", "c")), ModelResponse(content="ok")]
    await run_script(script, journal, approval_callback=approve)
    assert asked == ["a (ran: 0)", "b (ran: 0)", "c (ran: 0)"]


async def test_a_denied_call_is_its_result_and_the_others_run() -> None:
    journal = Journal()
    script = [turn(("look", "a"), ("write", "b"), ("look", "c")), ModelResponse(content="ok")]
    result, events, runtime = await run_script(
        script, journal, approval_callback=lambda call: call.name != "write"
    )
    assert result.status is RunState.COMPLETED and result.output == "ok"
    assert sorted(journal.lines) == ["end a", "end c", "start a", "start c"]  # never b
    [denied] = [e for e in events if e.event_type is EventType.TOOL_DENIED]
    assert denied.payload["name"] == "write"
    messages = tool_messages(await final_messages(runtime, result.run_id))
    assert [m["name"] for m in messages] == ["look", "write", "look"]
    assert "denied: the approval callback denied the tool call" in messages[1]["content"]


async def test_a_denied_call_stops_the_run_and_every_call_gets_its_message() -> None:
    journal = Journal()
    script = [turn(("look", "a"), ("write", "b"), ("look", "c")), ModelResponse(content="ok")]
    result, events, runtime = await run_script(
        script,
        journal,
        approval_callback=lambda call: call.name != "write",
        policy=LoopPolicy(on_tool_denied="stop"),
    )
    assert (result.status, result.stop_reason) == (RunState.STOPPED, StopReason.POLICY_DENIED)
    assert journal.lines == []  # nothing ran: decisions come first
    [denied] = [e for e in events if e.event_type is EventType.TOOL_DENIED]
    assert denied.payload["name"] == "write"
    assert [e.event_type for e in events].count(EventType.TOOL_APPROVED) == 1
    messages = tool_messages(await final_messages(runtime, result.run_id))
    assert [m["name"] for m in messages] == ["look", "write", "look"]
    assert "policy_denied) before this call ran" in messages[0]["content"]
    assert "denied: the approval callback denied the tool call" in messages[1]["content"]
    assert "before this call ran" in messages[2]["content"]


async def test_a_hook_rewrites_one_call_of_a_batch() -> None:
    journal = Journal()
    hooks = HookRegistry()

    def shout(context: HookContext) -> HookDecision:
        call = context.tool_call
        assert call is not None
        if call.arguments["key"] == "b":
            return HookDecision(modified_args={"key": "B"})
        return HookDecision.allow()

    seen: list[str] = []
    hooks.register(HookEvent.PRE_TOOL_USE, shout)
    hooks.register(
        HookEvent.POST_TOOL_USE,
        lambda c: seen.append(str(c.tool_result.output if c.tool_result else None)),
    )
    script = [turn(("look", "a"), ("look", "b")), ModelResponse(content="ok")]
    result, events, _ = await run_script(script, journal, hooks=hooks)
    assert result.status is RunState.COMPLETED
    approved = [e.payload["arguments"] for e in events if e.event_type is EventType.TOOL_APPROVED]
    assert approved == [{"key": "a"}, {"key": "B"}]
    assert sorted(journal.lines) == ["end B", "end a", "start B", "start a"]
    assert seen == ["{'done': 'a'}", "{'done': 'B'}"]  # POST_TOOL_USE in the model's order


async def test_a_crashing_tool_lets_running_siblings_finish_and_skips_the_rest() -> None:
    journal = Journal()

    def boom(args: Key) -> None:
        raise ZeroDivisionError("boom")

    class Boom:
        metadata = FunctionTool(
            name="boom", description="boom", arguments_model=Key, function=boom
        ).metadata.model_copy(update={"risk": ToolRisk.INSPECT})

        async def invoke(self, arguments: Any) -> Any:
            raise ZeroDivisionError("boom")  # outside the Tool contract: the run fails

    script = [
        turn(("look", "a"), ("boom", "b"), ("write", "c")),
        ModelResponse(content="never"),
    ]
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=FakeProvider(script), tools=[*tools(journal), Boom()], event_store=store
    )
    result = await runtime.run("go")
    assert (result.status, result.stop_reason) == (RunState.FAILED, StopReason.TOOL_ERROR)
    assert journal.lines == ["start a", "end a"]  # a finished; c (after the crash) never ran
    events = await store.get_events(result.run_id)
    assert [e.payload["name"] for e in events if e.event_type is EventType.TOOL_FAILED] == ["boom"]
    messages = tool_messages(await final_messages(runtime, result.run_id))
    assert [m["name"] for m in messages] == ["look", "boom", "write"]
    assert "ZeroDivisionError" in messages[1]["content"]
    assert "tool_error) before this call ran" in messages[2]["content"]


async def test_cancelling_a_batch_marks_the_running_calls_unknown() -> None:
    journal = Journal()
    journal.gates["a"] = asyncio.Event()  # never set: a hangs
    script = [turn(("look", "a"), ("look", "b"), ("write", "c")), ModelResponse(content="x")]
    store = InMemoryEventStore()
    runtime = AgentRuntime(provider=FakeProvider(script), tools=tools(journal), event_store=store)
    task = asyncio.create_task(runtime.run("go", run_id="r"))

    async def recorded() -> int:
        events = await store.get_events("r") if "r" in store._runs else []
        return sum(e.event_type is EventType.TOOL_COMPLETED for e in events)

    while not await recorded():  # b's result is durable while a still runs
        await asyncio.sleep(0.005)
    task.cancel()
    result = await task
    assert result.stop_reason is StopReason.USER_CANCELLED
    messages = tool_messages(await final_messages(runtime, "r"))
    assert [m["name"] for m in messages] == ["look", "look", "write"]
    assert "while this call was running; its outcome is unknown" in messages[0]["content"]
    assert messages[1]["content"] == '{"done":"b"}'
    assert "before this call ran" in messages[2]["content"]


async def test_a_vendor_repeating_call_ids_cannot_break_the_run() -> None:
    journal = Journal()
    same = [
        ModelResponse(
            tool_calls=[ToolCall(tool_call_id="call_0", name="look", arguments={"key": k})]
        )
        for k in ("a", "b")
    ]
    both = ModelResponse(
        tool_calls=[
            ToolCall(tool_call_id="call_0", name="look", arguments={"key": "c"}),
            ToolCall(tool_call_id="call_0", name="look", arguments={"key": "d"}),
        ]
    )
    result, events, runtime = await run_script([*same, both, ModelResponse(content="ok")], journal)
    assert result.status is RunState.COMPLETED, result.error
    [minted] = minted_ids(events).values()
    assert len(minted) == len(set(minted)) == 4
    messages = tool_messages(await final_messages(runtime, result.run_id))
    assert [m["vendor_id"] for m in messages] == ["call_0"] * 4
    assert [m["tool_call_id"] for m in messages] == minted


async def test_single_call_spelling_still_works() -> None:
    call = ToolCall(name="look", arguments={"key": "a"})
    response = ModelResponse(tool_call=call)
    assert response.tool_calls == [call] and response.tool_call is call
    assert ModelResponse(content="x").tool_call is None
    # a response stored before parallel calls (``tool_call``) still loads
    old = {"response_id": "r", "content": None, "tool_call": call.model_dump(), "usage": None}
    assert ModelResponse.model_validate(old).tool_calls == [call]
    with pytest.raises(ValueError, match="exactly one of content or tool_call"):
        ModelResponse(content="x", tool_call=call)
    with pytest.raises(ValueError, match="exactly one of content or tool_call"):
        ModelResponse(tool_calls=[])
    with pytest.raises(ValueError, match="not both"):
        ModelResponse(tool_call=call, tool_calls=[call])


async def test_a_default_id_is_kept_unless_the_run_already_gave_it_out() -> None:
    journal = Journal()
    once = ToolCall(name="look", arguments={"key": "a"})  # its id is the model's default
    again = ModelResponse(tool_calls=[once])
    both = ModelResponse(tool_calls=[once, ToolCall(name="look", arguments={"key": "b"})])
    script = [again, again, both, ModelResponse(content="ok")]
    policy = LoopPolicy(repeated_action_limit=5)  # the same call thrice is the point here
    result, events, _ = await run_script(script, journal, policy=policy)
    assert result.status is RunState.COMPLETED, result.error
    started = [e.payload["tool_call_id"] for e in events if e.event_type is EventType.TOOL_STARTED]
    assert started[0] == once.tool_call_id  # kept: nothing to take from a vendor
    assert len(set(started)) == len(started) == 4  # the same call object served again: new ids
    responses = [e.payload["response"] for e in events if e.event_type is EventType.MODEL_RESPONDED]
    assert all("vendor_id" not in c for r in responses for c in r.get("tool_calls", []))
