"""A PRE_TOOL_USE hook sees each call once per turn, across pauses and resumes.

The hook counts the calls it sees and rewrites their arguments. A run pauses
for approval; it is answered in place (same process) or approved elsewhere and
resumed by a new runtime on the same store ("another process"): the hook ran
once and the tool got the hook's arguments. When the rewritten arguments hold
a secret the log does not keep, resuming runs the hook again, says so in the
RUN_RESUMED event and tells the hook (``extra["again"]``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, RunState
from avo.approval import Answer, Approval
from avo.hooks import HookContext, HookDecision, HookEvent, HookRegistry
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.ops.approval import approve
from avo.storage.memory import InMemoryEventStore
from avo.tools import FunctionTool

SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"


class PushArgs(BaseModel):
    branch: str
    note: str = ""


SCRIPT = [
    ModelResponse(
        tool_call=ToolCall(tool_call_id="c1", name="git_push", arguments={"branch": "x"})
    ),
    ModelResponse(content="finished"),
]


class Hook:
    def __init__(self, note: str = "checked") -> None:
        self.note = note
        self.seen: list[tuple[dict[str, Any], bool]] = []

    def __call__(self, context: HookContext) -> HookDecision:
        assert context.tool_call is not None
        self.seen.append((dict(context.tool_call.arguments), bool(context.extra.get("again"))))
        arguments = dict(context.tool_call.arguments, note=self.note)
        return HookDecision(modified_args=arguments)


def _runtime(store: Any, pushed: list[dict[str, Any]], hook: Hook, **kw: Any) -> AgentRuntime:
    hooks = HookRegistry()
    hooks.register(HookEvent.PRE_TOOL_USE, hook)
    push = FunctionTool(
        name="git_push",
        description="Push a branch.",
        arguments_model=PushArgs,
        function=lambda a: pushed.append(a.model_dump()) or {"pushed": a.branch},
        risk=ToolRisk.EXECUTE,
    )
    return AgentRuntime(
        provider=FakeProvider(SCRIPT),
        tools=[push],
        event_store=store,
        hooks=hooks,
        approval_callback=lambda call: Approval.ask("pushing needs a human"),
        **kw,
    )


async def test_answered_in_place_the_hook_ran_once() -> None:
    pushed: list[dict[str, Any]] = []
    hook = Hook()
    runtime = _runtime(InMemoryEventStore(), pushed, hook, answerer=lambda r: Answer.approve())
    result = await runtime.run("push", run_id="r1")
    assert result.status is RunState.COMPLETED
    assert hook.seen == [({"branch": "x"}, False)]
    assert pushed == [{"branch": "x", "note": "checked"}]


async def test_resumed_elsewhere_the_hook_ran_once_and_its_arguments_hold() -> None:
    store, pushed = InMemoryEventStore(), []
    first_hook = Hook()
    paused = await _runtime(store, pushed, first_hook).run("push", run_id="r1")
    assert paused.status is RunState.PAUSED
    await approve(store, "r1", by="ana")
    second_hook = Hook(note="NOT this one")  # the other process's hook
    result = await _runtime(store, pushed, second_hook).resume("r1")
    assert result.status is RunState.COMPLETED
    assert first_hook.seen == [({"branch": "x"}, False)] and second_hook.seen == []
    assert pushed == [{"branch": "x", "note": "checked"}]  # the arguments the hook gave
    events = await store.get_events("r1")
    [asked] = [e.payload for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert asked["hook_arguments"] == "exact"
    [resumed] = [e.payload for e in events if e.event_type is EventType.RUN_RESUMED]
    assert "hooks_again" not in resumed


async def test_a_secret_in_the_rewritten_arguments_means_the_hook_runs_again() -> None:
    store, pushed = InMemoryEventStore(), []
    paused = await _runtime(store, pushed, Hook(note=f"token={SECRET}")).run("push", run_id="r1")
    assert paused.status is RunState.PAUSED
    events = await store.get_events("r1")
    [asked] = [e.payload for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert asked["hook_arguments"] == "redacted" and SECRET not in str(asked)
    await approve(store, "r1", by="ana")
    again = Hook(note=f"token={SECRET}")
    result = await _runtime(store, pushed, again).resume("r1")
    assert result.status is RunState.COMPLETED
    assert again.seen == [({"branch": "x"}, True)]  # told it has seen this call before
    assert pushed == [{"branch": "x", "note": f"token={SECRET}"}]
    events = await store.get_events("r1")
    [resumed] = [e.payload for e in events if e.event_type is EventType.RUN_RESUMED]
    [call_id] = resumed["hooks_again"]
    assert call_id == asked["tool_call_id"]
