"""A real agent run under each permission mode.

A scripted FakeProvider drives ``avo.runtime.AgentRuntime`` through reading,
grepping, editing and testing a small Python project in a temp workspace, with
``run_shell`` / ``test_runner`` running for real in bubblewrap. The event log
shows every approval decision (TOOL_APPROVED / TOOL_DENIED), and the callback's
records show why (approve / ask / deny by declared risk).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest

from avo.events import EventType
from avo.policies import LoopPolicy
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo.testing.scripts import answer, scripted, tool_call
from avo_permissions import InteractivePrompter, PermissionMode
from avo_permissions import plugin as permission_plugins
from avo_tools import (
    bind_sandbox,
    bind_workspace,
    edit_file_tool,
    grep_tool,
    read_file_tool,
    run_shell_tool,
)
from avo_tools import test_runner_tool as make_test_runner
from avo_tools.plan_tools import submit_plan_tool

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")

BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

READ = tool_call("read_file", {"path": "calc.py"})
GREP = tool_call("grep", {"pattern": r"def add", "include_glob": "*.py"})
PLAN = tool_call("submit_plan", {"plan_text": "1. fix add in calc.py\n2. run the tests"})
EDIT = tool_call("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
SHELL = tool_call("run_shell", {"command": "python3 -m pytest -q -p no:cacheprovider"})
TESTS = tool_call("test_runner", {})
DONE = answer("Fixed add(); the test passes.")


class ScriptedPrompter:
    """Answers approval prompts from a script; records what it was asked."""

    def __init__(self, answers: dict[str, bool] | None = None) -> None:
        self.answers = answers or {}
        self.asked: list[str] = []

    def __call__(self, call: Any) -> bool:
        self.asked.append(call.name)
        return self.answers.get(call.name, True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TEST)
    return root


def _tools() -> list[Any]:
    return [
        read_file_tool(),
        grep_tool(),
        submit_plan_tool(),
        edit_file_tool(),
        run_shell_tool(),
        make_test_runner(),
    ]


def _callback(mode: PermissionMode, tools: list[Any], prompter: Any) -> Any:
    plugin = getattr(permission_plugins, mode.value)
    (spec,) = plugin.specs  # the same spec the avo.permissions entry point registers
    return spec.factory({"prompter": prompter}, environ={}, tools=[t.metadata for t in tools])


async def _run(workspace: Path, mode: PermissionMode, script: list[Any], prompter: Any):  # type: ignore[no-untyped-def]
    from avo_sandbox import BubblewrapExecutor

    tools = _tools()
    callback = _callback(mode, tools, prompter)
    runtime = AgentRuntime(
        provider=scripted(*script),
        tools=tools,
        policy=LoopPolicy(max_steps=20, tool_timeout_seconds=60, no_progress_window=10),
        approval_callback=callback,
    )
    sandbox = BubblewrapExecutor(
        mem_limit="1g", environment={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    )
    with bind_workspace(workspace), bind_sandbox(sandbox):
        result = await runtime.run("Fix the failing test in calc.py", run_id=f"run-{mode.value}")
    events = await runtime.event_store.get_events(result.run_id)
    decisions = [
        (e.event_type.value, e.payload["name"])
        for e in events
        if e.event_type in (EventType.TOOL_APPROVED, EventType.TOOL_DENIED)
    ]
    outputs = {
        e.payload["name"]: e.payload["result"]["output"]
        for e in events
        if e.event_type is EventType.TOOL_COMPLETED
    }
    return result, decisions, callback, outputs


FULL = [READ, GREP, EDIT, SHELL, TESTS, DONE]
ALL_APPROVED = [
    ("tool_approved", "read_file"),
    ("tool_approved", "grep"),
    ("tool_approved", "edit_file"),
    ("tool_approved", "run_shell"),
    ("tool_approved", "test_runner"),
]


@pytest.mark.parametrize(
    ("mode", "script", "expected_asks"),
    [
        (PermissionMode.BYPASS_PERMISSIONS, FULL, []),
        (PermissionMode.ACCEPT_EDITS, FULL, ["run_shell"]),
        (PermissionMode.DEFAULT, FULL, ["edit_file", "run_shell"]),
        (PermissionMode.PLAN, [READ, GREP, PLAN, EDIT, SHELL, TESTS, DONE], ["run_shell"]),
    ],
)
async def test_agent_fixes_project_under_each_mode(
    workspace: Path, mode: PermissionMode, script: list[Any], expected_asks: list[str]
) -> None:
    prompter = ScriptedPrompter()
    result, decisions, callback, _ = await _run(workspace, mode, script, prompter)
    assert result.status is RunState.COMPLETED, result.error
    assert result.output == "Fixed add(); the test passes."
    assert prompter.asked == expected_asks
    expected = list(ALL_APPROVED)
    if mode is PermissionMode.PLAN:
        expected.insert(2, ("tool_approved", "submit_plan"))
    assert decisions == expected
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    asked = [r.tool_name for r in callback.records if r.decision.value == "ask"]
    assert asked == expected_asks


async def test_tool_results_show_the_real_work(workspace: Path) -> None:
    result, _, _, outputs = await _run(
        workspace, PermissionMode.BYPASS_PERMISSIONS, FULL, ScriptedPrompter()
    )
    assert result.status is RunState.COMPLETED
    assert outputs["read_file"]["content"] == BUGGY
    assert [(m["path"], m["line"]) for m in outputs["grep"]["matches"]] == [("calc.py", 1)]
    assert outputs["edit_file"] == {"path": "calc.py", "replacements": 1}
    # run_shell ran pytest inside bubblewrap, after the edit: the test passes.
    assert outputs["run_shell"]["exit_code"] == 0
    assert "1 passed" in outputs["run_shell"]["stdout"]
    assert outputs["test_runner"]["passed"] == 1 and outputs["test_runner"]["success"] is True


async def test_plan_mode_denies_edits_before_a_plan(workspace: Path) -> None:
    prompter = ScriptedPrompter()
    result, decisions, callback, _ = await _run(
        workspace, PermissionMode.PLAN, [READ, GREP, EDIT, DONE], prompter
    )
    # the denial is the edit's result: the model reads why and the run goes on
    assert result.status is RunState.COMPLETED
    assert decisions == [
        ("tool_approved", "read_file"),
        ("tool_approved", "grep"),
        ("tool_denied", "edit_file"),
    ]
    assert prompter.asked == []  # a hard deny, nobody is asked
    assert callback.records[-1].decision.value == "deny"
    assert "only after a plan is submitted with submit_plan" in callback.records[-1].reason
    assert (workspace / "calc.py").read_text() == BUGGY


async def test_default_mode_operator_says_no_to_the_shell(workspace: Path) -> None:
    prompter = ScriptedPrompter({"run_shell": False})
    result, decisions, _, outputs = await _run(workspace, PermissionMode.DEFAULT, FULL, prompter)
    assert result.status is RunState.COMPLETED  # the model was told no, and went on
    assert decisions[-2:] == [("tool_denied", "run_shell"), ("tool_approved", "test_runner")]
    assert prompter.asked == ["edit_file", "run_shell"]
    assert "run_shell" not in outputs and outputs["test_runner"]["passed"] == 1


async def test_interactive_prompter_on_a_terminal(workspace: Path) -> None:
    stdin, stdout = io.StringIO("y\nyes\n"), io.StringIO()
    prompter = InteractivePrompter(stdin=stdin, stdout=stdout)
    result, decisions, _, _ = await _run(workspace, PermissionMode.DEFAULT, FULL, prompter)
    assert result.status is RunState.COMPLETED
    assert decisions == ALL_APPROVED
    prompts = stdout.getvalue()
    assert prompts.count("? [y/N]: ") == 2
    assert 'Approve edit_file({"new_string": "a + b"' in prompts


async def test_interactive_prompter_end_of_input_leaves_the_run_paused(workspace: Path) -> None:
    prompter = InteractivePrompter(stdin=io.StringIO(""), stdout=io.StringIO())
    result, decisions, _, _ = await _run(workspace, PermissionMode.DEFAULT, FULL, prompter)
    assert result.status is RunState.PAUSED and result.stop_reason is None  # nobody answered
    assert decisions == ALL_APPROVED[:2]  # the edit waits, undecided
    assert (workspace / "calc.py").read_text() == BUGGY
