"""A person in the loop: denials the model reads, durable pauses, answers, questions, expiry.

Each "process" is a fresh AgentRuntime over the same store, with a
FakeProvider restored from the run's checkpoint, as another process would.
(The cross-process CLI versions on SQLite and PostgreSQL live in tests/.)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, LoopPolicy, RunState, StopReason
from avo.approval import Answer, Approval, RequestKind
from avo.exceptions import ApprovalError
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.ops.approval import answer, approve, deny, pending_requests
from avo.runtime_approval import AWAITING_APPROVAL
from avo.storage.memory import InMemoryEventStore
from avo.tools import FunctionTool


class PushArgs(BaseModel):
    branch: str


class AskArgs(BaseModel):
    question: str
    choices: list[str] | None = None


def _push_tool(pushed: list[str]) -> FunctionTool[PushArgs]:
    return FunctionTool(
        name="git_push",
        description="Push a branch.",
        arguments_model=PushArgs,
        function=lambda a: pushed.append(a.branch) or {"pushed": a.branch},
        risk=ToolRisk.EXECUTE,
    )


def _ask_tool() -> FunctionTool[AskArgs]:
    def never(args: AskArgs) -> None:
        raise AssertionError("a person answers ask_user; the tool never runs")

    return FunctionTool(
        name="ask_user",
        description="Ask the user.",
        arguments_model=AskArgs,
        function=never,
        risk=ToolRisk.INSPECT,
        asks_human=True,
    )


SCRIPT = [
    ModelResponse(
        tool_call=ToolCall(tool_call_id="call-1", name="git_push", arguments={"branch": "main"})
    ),
    ModelResponse(content="finished"),
]


def _ask_everything(call: ToolCall) -> Approval:
    return Approval.ask("pushing needs a human", rule="permission.ask[0] (tool git_push)")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _runtime(store: Any, pushed: list[str], **kwargs: Any) -> AgentRuntime:
    kwargs.setdefault("approval_callback", _ask_everything)
    return AgentRuntime(
        provider=FakeProvider(SCRIPT),
        tools=[_push_tool(pushed), _ask_tool()],
        event_store=store,
        **kwargs,
    )


async def _kinds(store: Any, run_id: str) -> list[EventType]:
    return [e.event_type for e in await store.get_events(run_id)]


async def test_a_denial_goes_back_to_the_model_and_the_run_goes_on() -> None:
    pushed: list[str] = []
    provider = FakeProvider(SCRIPT)
    runtime = AgentRuntime(
        provider=provider,
        tools=[_push_tool(pushed)],
        approval_callback=lambda call: Approval.deny("push to a branch, not main", rule="deny[0]"),
    )
    result = await runtime.run("ship it")
    assert result.status is RunState.COMPLETED and result.output == "finished" and pushed == []
    events = await runtime.event_store.get_events(result.run_id)
    [denied] = [e.payload for e in events if e.event_type is EventType.TOOL_DENIED]
    assert denied["rule"] == "deny[0]" and denied["blocked_by"] == "approval"
    seen = provider.requests[1].messages[-1]
    assert seen["role"] == "tool" and "push to a branch, not main" in str(seen["content"])
    assert EventType.TOOL_STARTED not in {e.event_type for e in events}


async def test_pause_then_another_process_approves_then_a_third_resumes() -> None:
    store, pushed = InMemoryEventStore(), []
    first = await _runtime(store, pushed).run("ship it", run_id="r1")
    assert first.status is RunState.PAUSED and first.stop_reason is None and pushed == []
    events = await store.get_events("r1")
    [asked] = [e.payload for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert asked["name"] == "git_push" and asked["arguments"] == {"branch": "main"}
    assert (asked["risk"], asked["reason"], asked["kind"]) == (
        "execute",
        "pushing needs a human",
        "approval",
    )
    paused = [e.payload for e in events if e.event_type is EventType.STATE_CHANGED][-1]
    assert paused == {
        "from_state": "approval_pending",
        "to_state": "paused",
        "reason": AWAITING_APPROVAL,
    }
    assert (await store.get_run("r1")).state is RunState.PAUSED  # type: ignore[union-attr]

    [pending] = await pending_requests(store)
    assert pending.tool_call_id == asked["tool_call_id"]  # the kernel's id for the call
    await approve(store, "r1", reason="release day", by="ana")  # "the second process"

    result = await _runtime(store, pushed).resume("r1")  # "the third process"
    assert result.status is RunState.COMPLETED and result.output == "finished"
    assert pushed == ["main"]
    events = await store.get_events("r1")
    [approved] = [e.payload for e in events if e.event_type is EventType.TOOL_APPROVED]
    assert approved["decided_by"] == "human" and approved["rule"] == "answered by ana"
    assert approved["reason"] == "release day"
    assert await pending_requests(store) == []


async def test_a_denial_with_a_reason_reaches_the_model() -> None:
    store, pushed = InMemoryEventStore(), []
    await _runtime(store, pushed).run("ship it", run_id="r1")
    await deny(store, "r1", reason="we freeze main on Fridays", by="ana")
    runtime = _runtime(store, pushed)
    result = await runtime.resume("r1")
    assert result.status is RunState.COMPLETED and pushed == []
    events = await store.get_events("r1")
    [denied] = [e.payload for e in events if e.event_type is EventType.TOOL_DENIED]
    assert denied["blocked_by"] == "human"
    assert denied["reason"] == "the user (ana) denied this call: we freeze main on Fridays"
    provider = runtime.provider
    assert isinstance(provider, FakeProvider)
    last = provider.requests[-1].messages[-1]
    assert last["role"] == "tool" and "we freeze main on Fridays" in str(last["content"])


async def test_resume_with_answers_from_python_and_stopping_on_denial() -> None:
    store, pushed = InMemoryEventStore(), []
    await _runtime(store, pushed).run("ship it", run_id="r1")
    [waiting] = await pending_requests(store)
    prefix = waiting.tool_call_id[:8]
    result = await _runtime(store, pushed).resume("r1", answers={prefix: True})
    assert result.status is RunState.COMPLETED and pushed == ["main"]

    store2 = InMemoryEventStore()
    policy = LoopPolicy(on_tool_denied="stop")
    await _runtime(store2, pushed, policy=policy).run("ship it", run_id="r2")
    [waiting] = await pending_requests(store2)
    stopped = await _runtime(store2, pushed, policy=policy).resume(
        "r2", answers={waiting.tool_call_id: Answer.deny("not now")}
    )
    assert stopped.status is RunState.STOPPED and stopped.stop_reason is StopReason.POLICY_DENIED
    assert "not now" in (stopped.error or "")


async def test_an_answerer_answers_in_place_and_none_leaves_it_paused() -> None:
    store, pushed = InMemoryEventStore(), []
    asked: list[str] = []

    def yes(request: Any) -> Answer:
        asked.append(request.summary())
        return Answer.approve()

    result = await _runtime(store, pushed, answerer=yes).run("ship it", run_id="r1")
    assert result.status is RunState.COMPLETED and pushed == ["main"]
    assert asked == ['git_push {"branch": "main"} (execute): pushing needs a human']
    kinds = await _kinds(store, "r1")
    assert kinds.index(EventType.HUMAN_INPUT_REQUESTED) < kinds.index(
        EventType.HUMAN_INPUT_RECEIVED
    )

    async def nobody(request: Any) -> None:
        return None

    other = await _runtime(InMemoryEventStore(), pushed, answerer=nobody).run("ship it")
    assert other.status is RunState.PAUSED

    def interrupted(request: Any) -> Answer:
        raise KeyboardInterrupt  # Ctrl-C at a prompt

    third = await _runtime(InMemoryEventStore(), pushed, answerer=interrupted).run("ship it")
    assert third.status is RunState.PAUSED


async def test_a_question_is_answered_by_a_person_and_becomes_the_result() -> None:
    store = InMemoryEventStore()
    script = [
        ModelResponse(
            tool_call=ToolCall(
                tool_call_id="q-1",
                name="ask_user",
                arguments={"question": "Which colour?", "choices": ["red", "blue"]},
            )
        ),
        ModelResponse(content="blue it is"),
    ]
    runtime = AgentRuntime(
        provider=FakeProvider(script),
        tools=[_ask_tool()],
        event_store=store,
        approval_callback=lambda call: True,
    )
    first = await runtime.run("paint", run_id="r1")
    assert first.status is RunState.PAUSED
    [request] = await pending_requests(store)
    assert (request.kind, request.question, request.choices) == (
        RequestKind.QUESTION,
        "Which colour?",
        ("red", "blue"),
    )
    with pytest.raises(ApprovalError, match=r"no open approval request \(it waits for: "):
        await approve(store, "r1")
    with pytest.raises(ApprovalError, match="is a question request; answer it: avo runs answer"):
        await approve(store, "r1", request.tool_call_id)
    await answer(store, "r1", "blue")
    resumed = AgentRuntime(
        provider=FakeProvider(script),
        tools=[_ask_tool()],
        event_store=store,
        approval_callback=lambda call: True,
    )
    result = await resumed.resume("r1")
    assert result.status is RunState.COMPLETED
    events = await store.get_events("r1")
    [done] = [e.payload for e in events if e.event_type is EventType.TOOL_COMPLETED]
    assert done["result"]["output"] == {"answer": "blue"}


async def test_an_unanswered_request_expires_by_policy() -> None:
    store, pushed, clock = InMemoryEventStore(), [], Clock()
    policy = LoopPolicy(human_input_timeout_seconds=3600)
    await _runtime(store, pushed, policy=policy, clock=clock).run("ship it", run_id="r1")
    [request] = await pending_requests(store)
    assert request.expires_at == clock.now + timedelta(hours=1)
    clock.now += timedelta(hours=2)
    with pytest.raises(ApprovalError, match="expired"):
        await approve(store, "r1", now=clock.now)
    result = await _runtime(store, pushed, policy=policy, clock=clock).resume("r1")
    assert result.status is RunState.COMPLETED and pushed == []
    events = await store.get_events("r1")
    [denied] = [e.payload for e in events if e.event_type is EventType.TOOL_DENIED]
    assert denied["blocked_by"] == "expired"
    assert (
        "nobody answered the approval request before it expired at 2026-01-05 10:00:00"
        in denied["reason"]
    )
    [expiry] = [e.payload for e in events if e.event_type is EventType.HUMAN_INPUT_RECEIVED]
    assert expiry["by"] == "policy"


async def test_a_crashing_pre_tool_hook_denies_naming_it_and_the_run_goes_on() -> None:
    from avo.hooks import HookEvent, HookRegistry

    def guard(context: Any) -> None:
        raise RuntimeError("policy database is down")

    hooks = HookRegistry()
    hooks.register(HookEvent.PRE_TOOL_USE, guard, name="policy-guard")
    pushed: list[str] = []
    provider = FakeProvider(SCRIPT)
    runtime = AgentRuntime(provider=provider, tools=[_push_tool(pushed)], hooks=hooks)
    result = await runtime.run("ship it")
    assert result.status is RunState.COMPLETED and result.output == "finished" and pushed == []
    events = await runtime.event_store.get_events(result.run_id)
    [denied] = [e.payload for e in events if e.event_type is EventType.TOOL_DENIED]
    assert denied["blocked_by"] == "hook"
    assert "hook 'policy-guard' raised RuntimeError: policy database is down" in denied["reason"]
    seen = provider.requests[-1].messages[-1]
    assert "policy-guard" in str(seen["content"])


async def test_a_batch_asks_in_order_pauses_once_and_again_until_all_are_answered() -> None:
    from avo.hooks import HookEvent, HookRegistry

    notes: list[str] = []

    def notify(context: Any) -> None:
        notes.append(context.notification)

    hooks = HookRegistry()
    hooks.register(HookEvent.NOTIFICATION, notify)
    store, pushed = InMemoryEventStore(), []
    script = [
        ModelResponse(
            tool_calls=[
                ToolCall(name="git_push", arguments={"branch": "a"}),
                ToolCall(name="git_push", arguments={"branch": "b"}),
                ToolCall(name="git_push", arguments={"branch": "c"}),
            ]
        ),
        ModelResponse(content="finished"),
    ]

    def policy(call: ToolCall) -> Approval:
        if call.arguments["branch"] == "b":
            return Approval.deny("never b")
        return Approval.ask("pushing needs a human")

    def runtime() -> AgentRuntime:
        return AgentRuntime(
            provider=FakeProvider(script),
            tools=[_push_tool(pushed)],
            event_store=store,
            approval_callback=policy,
            hooks=hooks,
        )

    first = await runtime().run("ship", run_id="r1")
    assert first.status is RunState.PAUSED
    waiting = await pending_requests(store)
    assert [r.arguments["branch"] for r in waiting] == ["a", "c"]  # the model's order
    assert len(notes) == 1 and "waits for a person" in notes[0] and "avo runs approve" in notes[0]

    await approve(store, "r1", waiting[0].tool_call_id)
    second = await runtime().resume("r1")  # c still waits: paused again, nothing ran
    assert second.status is RunState.PAUSED and pushed == []
    [still] = await pending_requests(store)
    assert still.arguments["branch"] == "c"

    await approve(store, "r1", all_calls=True)
    third = await runtime().resume("r1")
    assert third.status is RunState.COMPLETED and sorted(pushed) == ["a", "c"]
    events = await store.get_events("r1")
    assert [e.event_type for e in events].count(EventType.TOOL_DENIED) == 1  # b, decided once
    assert [e.event_type for e in events].count(EventType.HUMAN_INPUT_REQUESTED) == 2


async def test_runs_that_paused_replay_without_divergence() -> None:
    from avo.ops.replay import replay

    clock = Clock()
    policy = LoopPolicy(human_input_timeout_seconds=60)
    stores = []
    for how in ("approve", "deny", "expire", "still waiting"):
        store, pushed = InMemoryEventStore(), []
        await _runtime(store, pushed, policy=policy, clock=clock).run("ship it", run_id="r1")
        if how == "approve":
            await approve(store, "r1", reason="ok", by="ana", now=clock.now)
        elif how == "deny":
            await deny(store, "r1", reason="not main", by="ana", now=clock.now)
        if how == "expire":
            clock.now += timedelta(minutes=5)
        if how != "still waiting":
            result = await _runtime(store, pushed, policy=policy, clock=clock).resume("r1")
            assert result.status is RunState.COMPLETED, how
        stores.append((how, store))
    for how, store in stores:
        report = await replay(store, "r1")
        assert report.ok, (how, report.divergence)
