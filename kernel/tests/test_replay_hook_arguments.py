"""``avo replay`` plays back what a pre-tool hook did to a call's arguments.

Replay runs no hooks: a call whose arguments a PRE_TOOL_USE hook rewrote is
recorded with ``hook_arguments: "exact"`` on its approval (or its request for
a person), and replay hands the runtime those recorded arguments, so the
replayed call is the one that ran. The hook itself is not run again.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, RunState
from avo.approval import Answer, Approval
from avo.hooks import HookContext, HookDecision, HookEvent, HookRegistry
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.ops.approval import approve, pending_requests
from avo.ops.replay import replay
from avo.storage.memory import InMemoryEventStore
from avo.tools import FunctionTool


class PushArgs(BaseModel):
    branch: str
    note: str = ""


def _script() -> list[ModelResponse]:
    return [
        ModelResponse(
            tool_call=ToolCall(tool_call_id="c1", name="git_push", arguments={"branch": "x"})
        ),
        ModelResponse(
            tool_call=ToolCall(tool_call_id="c2", name="git_push", arguments={"branch": "y"})
        ),
        ModelResponse(content="finished"),
    ]


class Hook:
    """Rewrites the first call's arguments only (the second goes through as the model sent it)."""

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, context: HookContext) -> HookDecision:
        assert context.tool_call is not None
        self.seen += 1
        if context.tool_call.arguments.get("branch") != "x":
            return HookDecision()
        return HookDecision(modified_args=dict(context.tool_call.arguments, note="checked"))


def _runtime(store: Any, pushed: list[dict[str, Any]], hook: Hook, **kw: Any) -> AgentRuntime:
    hooks = HookRegistry()
    hooks.register(HookEvent.PRE_TOOL_USE, hook)
    push = FunctionTool(
        name="git_push",
        description="Push a branch.",
        arguments_model=PushArgs,
        function=lambda a: pushed.append(a.model_dump()) or {"pushed": a.branch, "note": a.note},
        risk=ToolRisk.EXECUTE,
    )
    return AgentRuntime(
        provider=FakeProvider(_script()), tools=[push], event_store=store, hooks=hooks, **kw
    )


async def _replayed(store: Any, hook: Hook) -> None:
    seen = hook.seen
    report = await replay(store, "r1")
    assert report.ok, report.divergence.describe() if report.divergence else report
    assert report.replayed_state == "completed"
    assert hook.seen == seen  # replay ran no hook


async def test_a_rewritten_call_the_callback_allowed_replays_as_it_ran() -> None:
    store, pushed, hook = InMemoryEventStore(), [], Hook()
    runtime = _runtime(store, pushed, hook, approval_callback=lambda call: Approval.allow())
    assert (await runtime.run("push", run_id="r1")).status is RunState.COMPLETED
    assert pushed == [{"branch": "x", "note": "checked"}, {"branch": "y", "note": ""}]
    approved = [
        e.payload for e in await store.get_events("r1") if e.event_type is EventType.TOOL_APPROVED
    ]
    assert [p.get("hook_arguments") for p in approved] == ["exact", None]
    await _replayed(store, hook)


async def test_a_rewritten_call_answered_in_place_replays_as_it_ran() -> None:
    store, pushed, hook = InMemoryEventStore(), [], Hook()
    runtime = _runtime(
        store,
        pushed,
        hook,
        approval_callback=lambda call: Approval.ask("pushing needs a human"),
        answerer=lambda request: Answer.approve(by="ana"),
    )
    assert (await runtime.run("push", run_id="r1")).status is RunState.COMPLETED
    assert pushed[0] == {"branch": "x", "note": "checked"}
    await _replayed(store, hook)


@pytest.mark.parametrize("resumed", [True, False])
async def test_a_rewritten_call_approved_elsewhere_replays_as_it_ran(resumed: bool) -> None:
    store, pushed, hook = InMemoryEventStore(), [], Hook()
    ask = {"approval_callback": lambda call: Approval.ask("pushing needs a human")}
    first = await _runtime(store, pushed, hook, **ask).run("push", run_id="r1")
    assert first.status is RunState.PAUSED
    [request] = await pending_requests(store, "r1")
    assert request.arguments == {"branch": "x", "note": "checked"}  # the hook's version
    await approve(store, "r1", request.tool_call_id, by="ana")
    if resumed:
        later = _runtime(store, pushed, hook, **ask, answerer=lambda r: Answer.approve())
        assert (await later.resume("r1")).status is RunState.COMPLETED
        assert pushed[0] == {"branch": "x", "note": "checked"}
        await _replayed(store, hook)
    else:  # still paused: replay stops where the recording does, without a divergence
        report = await replay(store, "r1")
        assert report.ok, report.divergence.describe() if report.divergence else report
