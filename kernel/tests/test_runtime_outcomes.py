"""A tool call whose effect is unknown pauses the run for a person; it never runs again silently.

The tools here run in this process; ``_Unsure`` stands in for an engine whose
worker died mid-call: its first invocation of chosen calls acts (the effect
happens, or not) and then raises ToolOutcomeUnknownError, as a remote dispatch
does when nobody can tell. Each resume uses a fresh runtime over the same store,
as another process would.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FunctionTool, LoopPolicy
from avo.approval import Answer
from avo.events import EventType, RunLogState
from avo.exceptions import ToolOutcomeUnknownError
from avo.models import ToolCall, ToolEffect, ToolResult, ToolRisk
from avo.ops import cancel
from avo.runtime_outcomes import OUTCOME_UNKNOWN
from avo.storage.memory import InMemoryEventStore
from avo.testing import answer, parallel_calls, scripted, tool_call
from avo.tools import ToolRegistry


class _Args(BaseModel):
    key: str


class _Unsure(ToolRegistry):
    """Runs tools; the first invocation of a call named in ``lose`` acts, then raises."""

    def __init__(self, tools: list[Any], lose: set[str], *, again: bool = False) -> None:
        super().__init__(tools)
        self.lose = lose
        self.again = again  # lose the re-run too
        self.seen: dict[str, int] = {}

    async def invoke(self, call: ToolCall, *, completed_tool_call_ids: set[str]) -> ToolResult:
        result = await super().invoke(call, completed_tool_call_ids=completed_tool_call_ids)
        key = str(call.arguments.get("key"))
        self.seen[key] = self.seen.get(key, 0) + 1
        if key in self.lose and (self.seen[key] == 1 or self.again):
            raise ToolOutcomeUnknownError(
                "the worker running it stopped", tool_call_id=call.tool_call_id
            )
        return result


def _tools(effects: list[str]) -> list[Any]:
    def append(args: _Args) -> dict[str, str]:
        effects.append(args.key)
        return {"appended": args.key}

    def read(args: _Args) -> dict[str, str]:
        return {"read": args.key}

    return [
        FunctionTool(
            name="append",
            description="append a line",
            arguments_model=_Args,
            function=append,
            risk=ToolRisk.MODIFY,
            effect=ToolEffect.NON_IDEMPOTENT,
            run_in_thread=False,
        ),
        FunctionTool(
            name="read",
            description="read a line",
            arguments_model=_Args,
            function=read,
            risk=ToolRisk.INSPECT,
            run_in_thread=False,
        ),
    ]


SCRIPT = (tool_call("append", {"key": "a"}), answer("done"))


def _runtime(store: Any, tools: ToolRegistry, script: Any = SCRIPT, **policy: Any) -> AgentRuntime:
    return AgentRuntime(
        provider=scripted(*script),
        tools=tools,
        event_store=store,
        policy=LoopPolicy(max_steps=10, max_runtime_seconds=None, **policy),
        environ={},
    )


async def _resume(store: Any, tools: ToolRegistry, script: Any = SCRIPT, **kwargs: Any) -> Any:
    rt = _runtime(store, tools, script)
    cp = await store.get_latest_checkpoint("r")
    rt.provider.restore_state(cp.provider_metadata)  # the script goes on where it stopped
    return await rt.resume("r", lease=False, **kwargs)


def _kinds(events: list[Any]) -> list[str]:
    return [e.event_type.value for e in events]


def _request(events: list[Any]) -> Any:
    found = [e for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert len(found) == 1
    return found[0]


@pytest.mark.asyncio
async def test_an_unknown_outcome_pauses_and_an_approval_runs_the_call_again() -> None:
    effects: list[str] = []
    store = InMemoryEventStore()
    tools = _Unsure(_tools(effects), lose={"a"})
    paused = await _runtime(store, tools).run("go", run_id="r")
    assert paused.status.value == "paused"
    events = await store.get_events("r")
    request = _request(events)
    assert request.payload["rule"] == OUTCOME_UNKNOWN and request.payload["kind"] == "approval"
    assert "nobody can tell whether append took effect" in str(request.payload["reason"])
    log = RunLogState.from_events("r", events)
    assert log.open_tool_calls == {request.payload["tool_call_id"]}  # no result recorded
    assert effects == ["a"]  # it did act before its worker "died"

    again = await _resume(store, tools)  # nobody answered: still paused, nothing re-run
    assert again.status.value == "paused" and effects == ["a"]
    assert (
        len(
            [
                e
                for e in await store.get_events("r")
                if e.event_type.value == "human_input_requested"
            ]
        )
        == 1
    )

    call_id = str(request.payload["tool_call_id"])
    done = await _resume(store, tools, answers={call_id: Answer.approve(by="ops")})
    assert done.status.value == "completed" and done.output == "done"
    assert effects == ["a", "a"]  # the person chose to run it again
    events = await store.get_events("r")
    starts = [e for e in events if e.event_type is EventType.TOOL_STARTED]
    assert [e.payload["tool_call_id"] for e in starts] == [call_id, call_id]
    assert _kinds(events).count("tool_completed") == 1


@pytest.mark.asyncio
async def test_a_denial_records_the_call_as_failed_and_the_model_reads_why() -> None:
    effects: list[str] = []
    store = InMemoryEventStore()
    tools = _Unsure(_tools(effects), lose={"a"})
    await _runtime(store, tools).run("go", run_id="r")
    call_id = str(_request(await store.get_events("r")).payload["tool_call_id"])
    rt = _runtime(store, tools)
    cp = await store.get_latest_checkpoint("r")
    rt.provider.restore_state(cp.provider_metadata)
    reason = "it already happened: the line is there"
    done = await rt.resume("r", lease=False, answers={call_id: Answer.deny(reason, by="ops")})
    assert done.status.value == "completed"
    assert effects == ["a"]  # never run again
    failed = [e for e in await store.get_events("r") if e.event_type is EventType.TOOL_FAILED]
    assert len(failed) == 1 and reason in str(failed[0].payload["error"])
    last_request = rt.provider.requests[-1]
    tool_messages = [m for m in last_request.messages if m.get("role") == "tool"]
    assert reason in str(tool_messages[-1]["content"])


@pytest.mark.asyncio
async def test_unknown_again_after_an_approval_fails_the_call_instead_of_asking_twice() -> None:
    effects: list[str] = []
    store = InMemoryEventStore()
    tools = _Unsure(_tools(effects), lose={"a"}, again=True)
    await _runtime(store, tools).run("go", run_id="r")
    call_id = str(_request(await store.get_events("r")).payload["tool_call_id"])
    done = await _resume(store, tools, answers={call_id: Answer.approve(by="ops")})
    assert done.status.value == "completed" and effects == ["a", "a"]
    events = await store.get_events("r")
    failed = [e for e in events if e.event_type is EventType.TOOL_FAILED]
    assert "not run a third time" in str(failed[0].payload["error"])
    assert _kinds(events).count("human_input_requested") == 1


@pytest.mark.asyncio
async def test_nothing_after_an_unknown_call_starts_until_a_person_decides() -> None:
    effects: list[str] = []
    store = InMemoryEventStore()
    tools = _Unsure(_tools(effects), lose={"b"})
    script = (
        parallel_calls(("read", {"key": "r1"}), ("append", {"key": "b"}), ("append", {"key": "c"})),
        answer("done"),
    )
    paused = await _runtime(store, tools, script).run("go", run_id="r")
    assert paused.status.value == "paused" and effects == ["b"]  # "c" waits behind "b"
    call_id = str(_request(await store.get_events("r")).payload["tool_call_id"])
    done = await _resume(store, tools, script, answers={call_id: Answer.approve(by="ops")})
    assert done.status.value == "completed" and effects == ["b", "b", "c"]
    events = await store.get_events("r")
    log = RunLogState.from_events("r", events)
    assert not log.open_tool_calls and _kinds(events).count("tool_completed") == 3


@pytest.mark.asyncio
async def test_an_expired_request_counts_as_denied() -> None:
    effects: list[str] = []
    store = InMemoryEventStore()
    tools = _Unsure(_tools(effects), lose={"a"})
    rt = _runtime(store, tools, human_input_timeout_seconds=60)
    await rt.run("go", run_id="r")
    later = _runtime(store, tools, human_input_timeout_seconds=60)
    later.clock = lambda: datetime.now(UTC) + timedelta(hours=1)
    cp = await store.get_latest_checkpoint("r")
    later.provider.restore_state(cp.provider_metadata)  # type: ignore[union-attr]
    done = await later.resume("r", lease=False)
    assert done.status.value == "completed" and effects == ["a"]
    received = [
        e for e in await store.get_events("r") if e.event_type.value == "human_input_received"
    ]
    assert received[0].payload["by"] == "policy" and received[0].payload["expired"] is True


@pytest.mark.asyncio
async def test_a_run_waiting_on_an_unknown_outcome_can_be_cancelled() -> None:
    store = InMemoryEventStore()
    await _runtime(store, _Unsure(_tools([]), lose={"a"})).run("go", run_id="r")
    result = await cancel(store, "r", environ={})
    assert result.status.value == "cancelled"
    log = RunLogState.from_events("r", await store.get_events("r"))
    assert not log.open_tool_calls and log.terminal


class _Crash(BaseException):
    """The process dies (nothing in the loop catches it)."""


class _DiesOnRerun(_Unsure):
    async def invoke(self, call: ToolCall, *, completed_tool_call_ids: set[str]) -> ToolResult:
        key = str(call.arguments.get("key"))
        if self.seen.get(key) == 1:  # the re-run acts, then the process dies
            self.seen[key] = 2
            await super(_Unsure, self).invoke(call, completed_tool_call_ids=completed_tool_call_ids)
            raise _Crash
        return await super().invoke(call, completed_tool_call_ids=completed_tool_call_ids)


@pytest.mark.asyncio
async def test_an_approved_rerun_cut_off_too_is_failed_on_resume_never_run_a_third_time() -> None:
    effects: list[str] = []
    store = InMemoryEventStore()
    tools = _DiesOnRerun(_tools(effects), lose={"a"})
    await _runtime(store, tools).run("go", run_id="r")
    call_id = str(_request(await store.get_events("r")).payload["tool_call_id"])
    with pytest.raises(_Crash):
        await _resume(store, tools, answers={call_id: Answer.approve(by="ops")})
    assert effects == ["a", "a"]
    done = await _resume(store, tools)
    assert done.status.value == "completed" and effects == ["a", "a"]
    failed = [e for e in await store.get_events("r") if e.event_type is EventType.TOOL_FAILED]
    assert len(failed) == 1 and "that run was cut off too" in str(failed[0].payload["error"])
