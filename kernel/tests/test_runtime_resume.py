"""resume(): continue from the latest checkpoint without repeating or hiding a tool effect.

These crashes are simulated in-process with a BaseException the runtime does
not catch; the SIGKILL crash suite runs against SQLite in plugins/sqlite.
"""

from __future__ import annotations

from typing import Any

import pytest

from avo import AgentRuntime, EventType, FakeProvider, RunState
from avo.events import RunLogState
from avo.exceptions import (
    CheckpointNotFoundError,
    RunAlreadyTerminalError,
    RunNotFoundError,
    UnsafeResumeError,
)
from avo.storage.memory import InMemoryEventStore
from avo.testing import minted_ids


class Crash(BaseException):
    """Stands in for the process dying."""


class CrashAfterToolResult(InMemoryEventStore):
    """Dies on the first checkpoint written after a tool result.

    Batching is off (the runtime then replays through the single-event methods),
    because a batch writes a tool result and the checkpoint after it atomically:
    only a store without ``append_batch`` can hold a result the latest
    checkpoint does not know about, which resume must then reuse.
    """

    armed = True
    append_batch = None  # type: ignore[assignment]

    async def save_checkpoint(self, checkpoint: Any, event: Any) -> Any:
        events = await self.get_events(event.run_id) if event.run_id in self._runs else []
        if (
            self.armed
            and events
            and events[-1].event_type is EventType.STATE_CHANGED
            and any(e.event_type is EventType.TOOL_COMPLETED for e in events[-2:])
        ):
            self.armed = False
            raise Crash
        return await super().save_checkpoint(checkpoint, event)


async def crashed_run(runtime: AgentRuntime) -> str:
    with pytest.raises(Crash):
        await runtime.run("t", run_id="run-1")
    return "run-1"


async def test_tool_started_without_result_is_refused(call: Any, answer: Any) -> None:
    from pydantic import BaseModel

    from avo import FunctionTool

    class A(BaseModel):
        n: int

    def die(args: A) -> None:
        raise Crash

    store = InMemoryEventStore()
    tool = FunctionTool(name="die", description="Dies.", arguments_model=A, function=die)
    script = [call("die", call_id="call-7", n=1), answer()]
    run_id = await crashed_run(
        AgentRuntime(provider=FakeProvider(script), tools=[tool], event_store=store)
    )
    again = AgentRuntime(provider=FakeProvider(script), tools=[tool], event_store=store)
    with pytest.raises(UnsafeResumeError) as info:
        await again.resume(run_id)
    [minted] = minted_ids(await store.get_events(run_id))["call-7"]
    assert str(info.value) == (
        f"Cannot safely resume because these tool calls started without a durable result: {minted}"
    )
    assert info.value.tool_call_ids == (minted,)


async def test_durable_result_is_reused_not_repeated(
    call: Any, answer: Any, echo_tool: Any, effects: list[Any]
) -> None:
    store = CrashAfterToolResult()
    script = [call(call_id="c1", n=1), call(call_id="c2", n=2), answer("fin")]
    run_id = await crashed_run(
        AgentRuntime(provider=FakeProvider(script), tools=[echo_tool], event_store=store)
    )
    assert effects == [{"text": "", "n": 1}]
    resumed = await AgentRuntime(
        provider=FakeProvider(script), tools=[echo_tool], event_store=store
    ).resume(run_id)
    assert resumed.status is RunState.COMPLETED and resumed.output == "fin"
    assert effects == [{"text": "", "n": 1}, {"text": "", "n": 2}]  # c1 ran exactly once
    events = await store.get_events(run_id)
    started = [e.payload["tool_call_id"] for e in events if e.event_type is EventType.TOOL_STARTED]
    ids = minted_ids(events)
    assert started == [ids["c1"][0], ids["c2"][0]]
    resumed_event = next(e for e in events if e.event_type is EventType.RUN_RESUMED)
    assert resumed_event.payload["state"] == "observation_recorded"
    log = RunLogState.from_events(run_id, events)
    assert log.terminal and not log.open_tool_calls


async def test_crash_during_model_call_resumes_from_checkpoint(
    call: Any, answer: Any, echo_tool: Any, effects: list[Any]
) -> None:
    store = InMemoryEventStore()
    crashing = FakeProvider([call(call_id="c1", n=1), Crash(), answer("never")])
    run_id = await crashed_run(
        AgentRuntime(provider=crashing, tools=[echo_tool], event_store=store)
    )
    # The restarted process has a model that answers this time; the checkpointed
    # cursor (1) makes it continue with the second script item.
    provider = FakeProvider([call(call_id="c1", n=1), answer("done")])
    result = await AgentRuntime(provider=provider, tools=[echo_tool], event_store=store).resume(
        run_id
    )
    assert (result.status, result.output, result.steps) == (RunState.COMPLETED, "done", 2)
    assert len(effects) == 1
    events = await store.get_events(run_id)
    resumed = next(e for e in events if e.event_type is EventType.RUN_RESUMED)
    assert resumed.payload["state"] == "observation_recorded"


async def test_resume_refusals(call: Any, answer: Any) -> None:
    store = InMemoryEventStore()
    runtime = AgentRuntime(provider=FakeProvider([answer()]), event_store=store)
    done = await runtime.run("t")
    with pytest.raises(RunAlreadyTerminalError, match="already finished"):
        await runtime.resume(done.run_id)
    with pytest.raises(RunNotFoundError, match="was not found"):
        await runtime.resume("missing")
    from avo import AgentEvent, EventType, RunRecord

    await store.create_run(
        RunRecord(run_id="bare", task="t"),
        AgentEvent(run_id="bare", event_type=EventType.RUN_CREATED),
    )
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint"):
        await runtime.resume("bare")


async def test_provider_state_mismatch_is_unsafe(call: Any, answer: Any, echo_tool: Any) -> None:
    store = CrashAfterToolResult()
    script = [call(call_id="c1", n=1), call(call_id="c2", n=2), answer()]
    run_id = await crashed_run(
        AgentRuntime(provider=FakeProvider(script), tools=[echo_tool], event_store=store)
    )
    short = FakeProvider([])  # cannot continue from the checkpointed cursor (1)
    with pytest.raises(UnsafeResumeError, match="checkpointed provider state does not match"):
        await AgentRuntime(provider=short, tools=[echo_tool], event_store=store).resume(run_id)


async def test_plugin_set_change_is_unsafe(call: Any, answer: Any, echo_tool: Any) -> None:
    class Plugins:
        def __init__(self, version: str) -> None:
            self.version = version
            import pluggy

            from avo import hookspecs

            pm = pluggy.PluginManager("avo")
            pm.add_hookspecs(hookspecs)
            self.hook = pm.hook

        def plugin_set(self) -> list[dict[str, str]]:
            return [
                {
                    "name": "sqlite",
                    "kind": "store",
                    "package": "avo-sqlite",
                    "version": self.version,
                }
            ]

        def check_plugin_set(self, recorded: list[dict[str, str]]) -> list[str]:
            old = recorded[0]["version"].split(".")[0]
            new = self.version.split(".")[0]
            return [] if old == new else [f"sqlite changed major version {old} -> {new}"]

    store = CrashAfterToolResult()
    script = [call(call_id="c1", n=1), answer()]
    run_id = await crashed_run(
        AgentRuntime(
            provider=FakeProvider(script),
            tools=[echo_tool],
            event_store=store,
            plugins=Plugins("1.2.0"),
        )
    )
    with pytest.raises(UnsafeResumeError, match="plugins it was composed from changed"):
        await AgentRuntime(
            provider=FakeProvider(script),
            tools=[echo_tool],
            event_store=store,
            plugins=Plugins("2.0.0"),
        ).resume(run_id)
    ok = await AgentRuntime(
        provider=FakeProvider(script),
        tools=[echo_tool],
        event_store=store,
        plugins=Plugins("1.3.0"),
    ).resume(run_id)
    assert ok.status is RunState.COMPLETED


class CrashAtFinalize(InMemoryEventStore):
    """Dies in finalize_run, after the final checkpoint is stored."""

    async def finalize_run(self, run: Any, state_event: Any, terminal_event: Any) -> Any:
        raise Crash


async def test_a_run_killed_before_finalize_completes_on_resume(
    call: Any, answer: Any, echo_tool: Any, effects: list[Any]
) -> None:
    store = CrashAtFinalize()
    script = [call(call_id="c1", n=1), answer("the answer")]
    run_id = await crashed_run(
        AgentRuntime(provider=FakeProvider(script), tools=[echo_tool], event_store=store)
    )
    cp = await store.get_latest_checkpoint(run_id)
    assert cp is not None and cp.state is RunState.DECISION_RECEIVED
    assert cp.pending_response is None
    store.__class__ = InMemoryEventStore  # the next process has a working disk
    again = AgentRuntime(provider=FakeProvider(script), tools=[echo_tool], event_store=store)
    result = await again.resume(run_id)
    assert (result.status, result.output) == (RunState.COMPLETED, "the answer")
    assert len(effects) == 1
    kinds = [e.event_type for e in await store.get_events(run_id)]
    assert kinds.count(EventType.RUN_COMPLETED) == 1
    assert kinds.count(EventType.MODEL_RESPONDED) == 2  # the model was not asked again
