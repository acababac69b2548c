"""A running tool's progress: recorded as tool_progress events, throttled per call."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, RunState
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.storage.memory import InMemoryEventStore
from avo.tool_progress import progress_reporter, report_progress
from avo.tools import FunctionTool


class Steps(BaseModel):
    steps: int


def _chatty(name: str = "chatty", risk: ToolRisk = ToolRisk.EXECUTE) -> FunctionTool[Steps]:
    async def run(args: Steps) -> str:
        for step in range(1, args.steps + 1):
            report_progress(step, args.steps, f"step {step}")
        await asyncio.sleep(0)
        return "done"

    return FunctionTool(
        name=name, description="Report much.", arguments_model=Steps, function=run, risk=risk
    )


def _script(*calls: ToolCall) -> list[ModelResponse]:
    return [ModelResponse(tool_calls=list(calls)), ModelResponse(content="ok")]


def _progress(events: list[Any]) -> list[dict[str, Any]]:
    return [e.payload for e in events if e.event_type is EventType.TOOL_PROGRESS]


async def test_a_flood_keeps_the_first_and_the_newest_update(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("avo.tool_progress.DEFAULT_INTERVAL", 3600.0)  # nothing else is due
    store = InMemoryEventStore()
    call = ToolCall(tool_call_id="c1", name="chatty", arguments={"steps": 1000})
    runtime = AgentRuntime(
        provider=FakeProvider(_script(call)), tools=[_chatty()], event_store=store
    )
    result = await runtime.run("go", run_id="r1")
    assert result.status is RunState.COMPLETED
    events = await store.get_events("r1")
    recorded = _progress(events)
    assert [(p["progress"], p["total"], p["message"]) for p in recorded] == [
        (1.0, 1000.0, "step 1"),
        (1000.0, 1000.0, "step 1000"),
    ]
    assert recorded[0]["tool_call_id"] == recorded[1]["tool_call_id"]
    kinds = [e.event_type for e in events]
    first = kinds.index(EventType.TOOL_PROGRESS)
    assert kinds.index(EventType.TOOL_STARTED) < first < kinds.index(EventType.TOOL_COMPLETED)


async def test_the_limit_caps_recorded_updates_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("avo.tool_progress.DEFAULT_INTERVAL", 0.0)  # every update is due
    monkeypatch.setattr("avo.tool_progress.DEFAULT_LIMIT", 5)
    store = InMemoryEventStore()
    calls = [
        ToolCall(tool_call_id=f"c{n}", name="look", arguments={"steps": 50}) for n in (1, 2)
    ]  # inspect-only: the two run side by side
    runtime = AgentRuntime(
        provider=FakeProvider(_script(*calls)),
        tools=[_chatty("look", ToolRisk.INSPECT)],
        event_store=store,
    )
    assert (await runtime.run("go", run_id="r1")).status is RunState.COMPLETED
    recorded = _progress(await store.get_events("r1"))
    for call_id in {p["tool_call_id"] for p in recorded}:
        mine = [p["progress"] for p in recorded if p["tool_call_id"] == call_id]
        assert mine == [1.0, 2.0, 3.0, 4.0, 5.0, 50.0]  # five, then the newest at the end
    assert len({p["tool_call_id"] for p in recorded}) == 2


def test_outside_a_run_reporting_does_nothing() -> None:
    assert progress_reporter() is None
    report_progress(1, 2, "nobody listens")  # no error, nothing recorded


async def test_updates_are_throttled_on_the_runtime_timer() -> None:
    # A runtime with deterministic seams (a Temporal workflow's) decides which updates
    # to record from its own timer, not the process clock: a replay decides the same.
    store = InMemoryEventStore()
    call = ToolCall(tool_call_id="c1", name="chatty", arguments={"steps": 4})
    runtime = AgentRuntime(
        provider=FakeProvider(_script(call)), tools=[_chatty()], event_store=store
    )
    ticks = iter(range(0, 10_000, 5))  # every read of the timer: 5 s later
    runtime.timer = lambda: float(next(ticks))
    assert (await runtime.run("go", run_id="r1")).status is RunState.COMPLETED
    recorded = _progress(await store.get_events("r1"))
    assert [p["progress"] for p in recorded] == [1.0, 2.0, 3.0, 4.0]  # each one due


def test_a_follower_of_a_run_driven_elsewhere_prints_its_progress_notes() -> None:
    from avo.cli._progress import ProgressPrinter
    from avo.events import AgentEvent

    payload = {"tool_call_id": "c1", "name": "build", "progress": 2, "total": 3, "message": "a\nb"}
    event = AgentEvent(run_id="r1", sequence=5, event_type=EventType.TOOL_PROGRESS, payload=payload)
    elsewhere = ProgressPrinter(verbosity=1, tools=False, notes=True)
    assert elsewhere.line(event) == "  … build 2/3 a b"
    assert ProgressPrinter(verbosity=0, tools=False, notes=True).line(event) is None  # quiet
    # in process the tool's own printing shows it (an MCP server's progress = "print")
    assert ProgressPrinter(verbosity=1, tools=True).line(event) is None


async def test_a_sync_tool_reports_from_its_worker_thread() -> None:
    # A sync tool runs in a worker thread; its updates reach the run's loop in order
    # and are written while the call still runs, as an async tool's are.
    release = threading.Event()

    def slow(args: Steps) -> str:
        report_progress(1, args.steps, "half way")
        release.wait(30)
        report_progress(2, args.steps, "all done")
        return "done"

    store = InMemoryEventStore()
    call = ToolCall(tool_call_id="c1", name="slow", arguments={"steps": 2})
    tool = FunctionTool(name="slow", description="Block.", arguments_model=Steps, function=slow)
    runtime = AgentRuntime(provider=FakeProvider(_script(call)), tools=[tool], event_store=store)
    running = asyncio.create_task(runtime.run("go", run_id="r1"))
    seen: list[dict[str, Any]] = []
    for _ in range(500):  # up to ~5 s for the first update to be written
        seen = _progress(await store.get_events("r1"))
        if seen or running.done():
            break
        await asyncio.sleep(0.01)
    release.set()
    result = await running
    assert result.status is RunState.COMPLETED
    assert [(p["progress"], p["message"]) for p in seen] == [(1.0, "half way")]
    events = await store.get_events("r1")
    assert [(p["progress"], p["message"]) for p in _progress(events)] == [
        (1.0, "half way"),
        (2.0, "all done"),
    ]
    kinds = [e.event_type for e in events]
    last = len(kinds) - 1 - kinds[::-1].index(EventType.TOOL_PROGRESS)
    assert kinds.index(EventType.TOOL_STARTED) < last < kinds.index(EventType.TOOL_COMPLETED)
