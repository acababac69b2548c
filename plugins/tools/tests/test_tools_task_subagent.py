"""The task tool: child AgentRuntime runs with explore/general subsets and parent.child ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from avo.events import EventType
from avo.exceptions import ToolExecutionError
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo.testing.scripts import answer, scripted, tool_call
from avo_tools import bind_workspace, edit_file_tool, grep_tool, read_file_tool
from avo_tools.task_tool import task_tool


async def test_subagents_run_as_children_with_their_tool_subsets(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    provider = scripted(
        tool_call("task", {"agent_type": "explore", "prompt": "Where is add defined?"}),
        tool_call("grep", {"pattern": "def add"}),  # child 1 (explore)
        answer("add is defined in calc.py line 1"),
        tool_call("task", {"agent_type": "explore", "prompt": "Fix add"}),
        tool_call("edit_file", {"path": "calc.py", "old_string": "-", "new_string": "+"}),
        answer("I cannot edit files"),  # child 2: explore has no edit_file
        tool_call("task", {"agent_type": "general", "prompt": "Fix add", "max_steps": 3}),
        tool_call("edit_file", {"path": "calc.py", "old_string": "-", "new_string": "+"}),
        answer("fixed"),  # child 3 (general)
        answer("All done"),
    )
    runtime = AgentRuntime(
        provider=provider, tools=[read_file_tool(), grep_tool(), edit_file_tool()]
    )
    runtime.tools.register(task_tool(parent_runtime=runtime))
    with bind_workspace(tmp_path):
        result = await runtime.run("Investigate calc", run_id="parent-1")
    assert result.status is RunState.COMPLETED and result.output == "All done"

    store = runtime.event_store
    task_results = [
        e.payload["result"]["output"]
        for e in await store.get_events("parent-1")
        if e.event_type is EventType.TOOL_COMPLETED
    ]
    assert [
        (r["child_run_id"], r["agent_type"], r["status"], r["output"]) for r in task_results
    ] == [
        ("parent-1.task-1", "explore", "completed", "add is defined in calc.py line 1"),
        ("parent-1.task-2", "explore", "completed", "I cannot edit files"),
        ("parent-1.task-3", "general", "completed", "fixed"),
    ]
    child1 = await store.get_events("parent-1.task-1")
    created = child1[0]
    assert created.event_type is EventType.RUN_CREATED
    assert created.payload["task"] == "Where is add defined?"
    explore_tools = [t.name for t in provider.requests[1].tools]
    assert explore_tools == ["read_file", "grep"]  # INSPECT only, never task itself
    child2_failures = [
        e.payload["error"]
        for e in await store.get_events("parent-1.task-2")
        if e.event_type is EventType.TOOL_FAILED
    ]
    assert len(child2_failures) == 1 and "edit_file" in child2_failures[0]
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_task_advertised_through_the_constructor(tmp_path: Path) -> None:
    from avo.hooks import HookRegistry

    (tmp_path / "a.txt").write_text("alpha")
    hooks = HookRegistry()
    runtime: AgentRuntime | None = None
    task = task_tool(parent_runtime=lambda: runtime, hooks=hooks)
    provider = scripted(
        tool_call("task", {"prompt": "read a.txt"}),
        tool_call("read_file", {"path": "a.txt"}),
        answer("it says alpha"),
        answer("done"),
    )
    runtime = AgentRuntime(provider=provider, tools=[read_file_tool(), task], hooks=hooks)
    with bind_workspace(tmp_path):
        result = await runtime.run("go", run_id="p")
    assert result.status is RunState.COMPLETED
    assert [t.name for t in provider.requests[0].tools] == ["read_file", "task"]
    child = await runtime.event_store.get_events("p.task-1")
    assert child[-1].event_type is EventType.RUN_COMPLETED


def test_callable_parent_needs_hooks() -> None:
    with pytest.raises(ToolExecutionError, match="needs hooks="):
        task_tool(parent_runtime=lambda: None)


async def test_task_outside_a_run_is_refused() -> None:
    runtime = AgentRuntime(provider=scripted(answer("x")))
    tool = task_tool(parent_runtime=runtime)
    with pytest.raises(ToolExecutionError, match="outside a parent run"):
        await tool.invoke({"prompt": "hi"})
