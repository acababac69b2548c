"""Plan mode remembers a submitted plan per run, and rebuilds it from the run's log.

One permission callback (one runtime) drives two runs on a real SQLite store:
the first submits a plan and may edit; the second has no plan and may not. A
run resumed by a *new* callback (another process, as ``avo runs resume``)
finds its plan in the log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from avo.approval import Answer
from avo.events import EventType
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo.testing.scripts import answer, scripted, tool_call
from avo_permissions import PermissionMode, build_mode_callback
from avo_sqlite import SQLiteEventStore
from avo_tools import bind_workspace, write_file_tool
from avo_tools.ask_tool import ask_user_tool
from avo_tools.plan_tools import submit_plan_tool

PLAN = tool_call("submit_plan", {"plan_text": "1. write notes.md"})
WRITE = tool_call("write_file", {"path": "notes.md", "content": "planned\n"})
ASK = tool_call("ask_user", {"question": "Go ahead?"})


def _tools() -> list[Any]:
    return [submit_plan_tool(), write_file_tool(), ask_user_tool()]


async def _decisions(store: Any, run_id: str) -> list[tuple[str, str]]:
    kinds = (EventType.TOOL_APPROVED, EventType.TOOL_DENIED)
    return [
        (e.event_type.value, e.payload["name"])
        for e in await store.get_events(run_id)
        if e.event_type in kinds
    ]


async def test_a_plan_belongs_to_its_run(tmp_path: Path) -> None:
    store = SQLiteEventStore(tmp_path / "runs.db")
    tools = _tools()
    callback = build_mode_callback(PermissionMode.PLAN, tools=tools)
    runtime = AgentRuntime(
        provider=scripted(PLAN, WRITE, answer("done"), WRITE, answer("denied")),
        tools=tools,
        approval_callback=callback,
        event_store=store,
    )
    with bind_workspace(tmp_path):
        first = await runtime.run("plan then write", run_id="with-plan")
        second = await runtime.run("write without a plan", run_id="without-plan")
    assert first.status is RunState.COMPLETED and second.status is RunState.COMPLETED
    assert await _decisions(store, "with-plan") == [
        ("tool_approved", "submit_plan"),
        ("tool_approved", "write_file"),
    ]
    assert await _decisions(store, "without-plan") == [("tool_denied", "write_file")]
    assert callback.plans == {"with-plan"}
    await store.close()


async def test_a_resumed_run_finds_its_plan_in_the_log(tmp_path: Path) -> None:
    store = SQLiteEventStore(tmp_path / "runs.db")
    tools = _tools()
    first = AgentRuntime(
        provider=scripted(PLAN, ASK),
        tools=tools,
        approval_callback=build_mode_callback(PermissionMode.PLAN, tools=tools),
        event_store=store,
    )
    with bind_workspace(tmp_path):
        paused = await first.run("plan, ask, write", run_id="paused")
    assert paused.status is RunState.PAUSED
    fresh = build_mode_callback(PermissionMode.PLAN, tools=tools)  # what another process builds
    second = AgentRuntime(
        provider=scripted(PLAN, ASK, WRITE, answer("written")),
        tools=tools,
        approval_callback=fresh,
        event_store=store,
    )
    [request] = [
        e for e in await store.get_events("paused") if e.event_type.value == "human_input_requested"
    ]
    call_id = request.payload["tool_call_id"]
    with bind_workspace(tmp_path):
        done = await second.resume("paused", answers={call_id: Answer.reply("yes")})
    assert done.status is RunState.COMPLETED, done
    assert (tmp_path / "notes.md").read_text() == "planned\n"
    assert ("tool_approved", "write_file") in await _decisions(store, "paused")
    assert fresh.plans == {"paused"}
    await store.close()
