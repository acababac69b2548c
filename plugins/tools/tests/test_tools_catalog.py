"""Every catalog tool: contract checker, spec/metadata risk agreement, behaviour."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from avo.exceptions import ToolExecutionError, ToolValidationError
from avo.models import ToolRisk
from avo.testing.tools import ToolContractError, check_tool_contract, check_tool_spec
from avo.tools import FunctionTool
from avo_tools import (
    batch_replace_tool,
    bind_sandbox,
    bind_workspace,
    edit_file_tool,
    git_commit_tool,
    git_diff_tool,
    git_status_tool,
    glob_tool,
    grep_tool,
    lint_tool,
    read_file_tool,
    run_shell_tool,
    symbols_tool,
    workspace_map_tool,
    write_file_tool,
)
from avo_tools import (
    test_runner_tool as make_test_runner,
)
from avo_tools.output import cap_output, cap_text
from avo_tools.plan_tools import PlanBoard, plan_tasks_tool, submit_plan_tool
from avo_tools.plugin import SPECS

PROJECT = {
    "calc.py": "def add(a, b):\n    return a - b\n\n\nclass Calc:\n    def mul(self, a, b):\n"
    "        return a * b\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "README.md": "calc project\nTODO: fix add\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in PROJECT.items():
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_spec_builds_a_tool_with_the_same_risk(name: str) -> None:
    tool = check_tool_spec(SPECS[name])
    assert tool.metadata.risk is SPECS[name].risk


VALID_ARGS = {
    "read_file": {"path": "calc.py"},
    "write_file": {"path": "new.txt", "content": "x"},
    "edit_file": {"path": "README.md", "old_string": "TODO", "new_string": "DONE"},
    "batch_replace": {
        "patches": [{"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}]
    },
    "glob": {"pattern": "*.py"},
    "grep": {"pattern": "def"},
    "symbols": {},
    "workspace_map": {},
    "submit_plan": {"plan_text": "1. fix"},
    "plan_tasks": {"goal": "fix calc"},
}


@pytest.mark.parametrize("name", sorted(VALID_ARGS))
async def test_contract_checker_passes_catalog_tools(name: str, project: Path) -> None:
    tool = SPECS[name].factory({})
    with bind_workspace(project):
        await check_tool_contract(tool, valid_arguments=VALID_ARGS[name])


async def test_contract_checker_catches_broken_tools() -> None:
    class Loose(BaseModel):
        model_config = ConfigDict(extra="allow")
        x: int

    class Strict(BaseModel):
        x: int

    undeclared = FunctionTool(
        name="t", description="d", arguments_model=Strict, function=lambda a: 1
    )
    with pytest.raises(ToolContractError, match="declares no risk"):
        await check_tool_contract(undeclared, valid_arguments={"x": 1})
    non_json = FunctionTool(
        name="t",
        description="d",
        arguments_model=Strict,
        function=lambda a: float("nan"),
        risk=ToolRisk.INSPECT,
    )
    with pytest.raises(ToolContractError, match="non-JSON"):
        await check_tool_contract(non_json, valid_arguments={"x": 1})
    assert Loose.model_json_schema().get("additionalProperties") is True
    with pytest.raises(ToolContractError, match="bad name"):
        raise ToolContractError("bad name")


async def test_file_tools_roundtrip(project: Path) -> None:
    with bind_workspace(project):
        out = await write_file_tool().invoke({"path": "pkg/new.py", "content": "X = 1\n"})
        assert out == {"path": "pkg/new.py", "bytes_written": 6}
        edit = edit_file_tool()
        assert await edit.invoke(
            {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
        ) == {
            "path": "calc.py",
            "replacements": 1,
        }
        with pytest.raises(ToolExecutionError, match=r"not found in calc\.py"):
            await edit.invoke({"path": "calc.py", "old_string": "nope", "new_string": "x"})
        with pytest.raises(ToolExecutionError, match="occurs 2 times"):
            await edit.invoke(
                {"path": "calc.py", "old_string": "return a", "new_string": "return b"}
            )
        with pytest.raises(ToolValidationError, match="must differ"):
            await edit.invoke({"path": "calc.py", "old_string": "a", "new_string": "a"})
        batch = batch_replace_tool()
        with pytest.raises(ToolExecutionError, match="not found"):
            await batch.invoke(
                {
                    "patches": [
                        {"path": "README.md", "old_string": "TODO", "new_string": "DONE"},
                        {"path": "calc.py", "old_string": "missing", "new_string": "x"},
                    ]
                }
            )
        assert "TODO" in (project / "README.md").read_text()  # all or nothing
        dry = await batch.invoke(
            {
                "patches": [{"path": "README.md", "old_string": "TODO", "new_string": "DONE"}],
                "dry_run": True,
            }
        )
        assert dry["dry_run"] is True and "TODO" in (project / "README.md").read_text()
        await batch.invoke(
            {"patches": [{"path": "README.md", "old_string": "TODO", "new_string": "DONE"}]}
        )
    assert (project / "README.md").read_text() == "calc project\nDONE: fix add\n"
    assert (project / "calc.py").read_text().startswith("def add(a, b):\n    return a + b")


async def test_search_tools(project: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "deep.py").write_text("def deep():\n    pass\n")
    with bind_workspace(project):
        globbed = await glob_tool().invoke({"pattern": "**/*.py"})
        assert globbed["matches"] == ["calc.py", "test_calc.py", "sub/deep.py"]
        flat = await glob_tool().invoke({"pattern": "*.py", "recursive": False})
        assert flat["matches"] == ["calc.py", "test_calc.py"]
        grep = await grep_tool().invoke(
            {"pattern": r"def \w+", "include_glob": "*.py", "context_lines": 1}
        )
        assert [(m["path"], m["line"]) for m in grep["matches"]] == [
            ("calc.py", 1),
            ("calc.py", 6),
            ("test_calc.py", 4),
            ("sub/deep.py", 1),
        ]
        assert grep["matches"][0]["after"] == ["    return a - b"]
        limited = await grep_tool().invoke({"pattern": "def", "max_results": 1})
        assert limited["truncated"] is True and len(limited["matches"]) == 1
        with pytest.raises(ToolExecutionError, match="invalid regular expression"):
            await grep_tool().invoke({"pattern": "("})
        syms = await symbols_tool().invoke({"symbol_name": "mul"})
        assert syms["symbols"] == [
            {"name": "Calc.mul", "kind": "method", "path": "calc.py", "line": 6}
        ]
        mapped = await workspace_map_tool().invoke({"recent_limit": 2})
        assert mapped["total_files"] == 4 and len(mapped["recent"]) == 2


async def test_plan_tools() -> None:
    board = PlanBoard()
    plan = plan_tasks_tool(board)
    out = await plan.invoke({"goal": "fix", "tasks": [{"id": "t1", "title": "edit"}]})
    assert out["remaining"] == ["t1"]
    out = await plan.invoke({"subtasks": [{"id": "s1", "parent_id": "t1", "title": "a"}]})
    assert out["remaining"] == ["t1", "s1"]
    out = await plan.invoke({"complete": "s1"})
    assert out["remaining"] == ["t1"]
    with pytest.raises(ToolExecutionError, match="unknown parent task"):
        await plan.invoke({"subtasks": [{"id": "s2", "parent_id": "zz", "title": "a"}]})
    assert (await plan.invoke({"reset": True}))["tasks"] == []
    submitted = await submit_plan_tool(board).invoke({"plan_text": "1. edit"})
    assert submitted == {"submitted": True, "plan_text": "1. edit", "revision": 1}


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
async def test_git_tools(project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    # A hostile repo config must not run anything on the host.
    marker = project.parent / "pwned"
    hook = project / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    with (project / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = touch {marker}\n[diff]\n\texternal = touch {marker}\n")
    with bind_workspace(project):
        status = await git_status_tool().invoke({})
        assert status["clean"] is False and status["total_files"] == 3
        with pytest.raises(ToolValidationError, match="not a Conventional Commit"):
            await git_commit_tool().invoke({"message": "did stuff"})
        commit = await git_commit_tool().invoke({"message": "feat: calc project"})
        assert sorted(commit["files"]) == ["README.md", "calc.py", "test_calc.py"]
        (project / "calc.py").write_text("changed\n")
        diff = await git_diff_tool().invoke({"path": "calc.py"})
        assert "+changed" in diff["diff"]
        assert (await git_status_tool().invoke({}))["files"] == [{"status": "M", "path": "calc.py"}]
    assert not marker.exists()


async def test_shell_tools_refuse_without_sandbox(project: Path) -> None:
    with bind_workspace(project):
        for tool, args in (
            (run_shell_tool(), {"command": "echo hi"}),
            (lint_tool(), {}),
            (make_test_runner(), {}),
        ):
            with pytest.raises(ToolExecutionError, match=r"SandboxNotBoundError.*never runs"):
                await tool.invoke(args)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")
async def test_shell_lint_and_tests_in_bubblewrap(project: Path) -> None:
    from avo_sandbox import BubblewrapExecutor

    with (
        bind_workspace(project),
        bind_sandbox(
            BubblewrapExecutor(mem_limit="1g", environment={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        ),
    ):
        shell = await run_shell_tool().invoke({"command": "ls; echo err >&2; exit 4"})
        assert (
            shell["exit_code"] == 4 and "calc.py" in shell["stdout"] and shell["stderr"] == "err\n"
        )
        lint = await lint_tool().invoke({})
        assert lint["linter"] in {"ruff", "compileall"} and lint["clean"] is True
        tests = await make_test_runner().invoke({"target": "test_calc.py::test_add"})
        assert tests["failed"] == 1 and tests["passed"] == 0 and tests["success"] is False
        (project / "calc.py").write_text(PROJECT["calc.py"].replace("a - b", "a + b"))
        tests = await make_test_runner().invoke({})
        assert tests["passed"] == 1 and tests["success"] is True
        with pytest.raises(ToolExecutionError, match="escapes workspace root"):
            await make_test_runner().invoke({"target": "../x.py"})


class _FloodExecutor:
    async def run(self, command: str, **kwargs: object) -> object:
        class R:
            exit_code = 0
            stdout = "HEAD" + "x" * 5_000_000 + "TAIL"
            stderr = ""
            duration_ms = 1.0

        return R()


async def test_runaway_output_is_capped_at_the_source(project: Path) -> None:
    with bind_workspace(project), bind_sandbox(_FloodExecutor()):
        out = await run_shell_tool().invoke({"command": "yes"})
    assert len(out["stdout"]) < 40_000
    assert out["stdout"].startswith("HEAD") and out["stdout"].endswith("TAIL")
    assert "avo cut" in out["stdout"]
    (project / "big.txt").write_text("B" + "y" * 900_000 + "E")
    with bind_workspace(project):
        read = await read_file_tool().invoke({"path": "big.txt"})
    assert read["size"] == 900_002 and read["content"].startswith("B")
    assert read["content"].endswith("E") and len(read["content"]) < 101_000


async def test_configured_workspace_is_a_default_and_bound_wins(
    project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "calc.py").write_text("other\n")
    tool = read_file_tool(workspace=project)
    assert (await tool.invoke({"path": "calc.py"}))["content"] == PROJECT["calc.py"]
    with bind_workspace(other):
        assert (await tool.invoke({"path": "calc.py"}))["content"] == "other\n"


def test_unknown_configured_sandbox_is_a_clear_error(project: Path) -> None:
    from avo.exceptions import PluginError

    with pytest.raises(PluginError, match=r"unknown sandbox 'nope'; available: .*bubblewrap"):
        SPECS["run_shell"].factory({"workspace": str(project), "sandbox": "nope"})


def test_cap_helpers() -> None:
    assert cap_text("short", 10) == "short"
    capped = cap_text("a" * 50 + "b" * 50, 30)
    assert capped.startswith("a" * 20) and capped.endswith("b" * 10)
    assert "avo cut 70 of 100 characters" in capped
    listed = cap_output(list(range(10)), max_items=3)
    assert listed[:3] == [0, 1, 2] and "cut 7 of 10 items" in listed[3]


async def test_reading_bytes_that_are_not_text_says_so(project: Path) -> None:

    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    with bind_workspace(project), pytest.raises(ToolExecutionError) as raised:
        await read_file_tool().invoke({"path": "logo.png"})
    message = str(raised.value)
    assert "raised NotTextError" in message and "EditFileError" not in message
    assert "logo.png is not utf-8 text (it looks like a binary file)" in message
    (project / "latin.txt").write_bytes("café".encode("latin-1"))
    with bind_workspace(project):
        with pytest.raises(ToolExecutionError, match="pass encoding"):
            await read_file_tool().invoke({"path": "latin.txt"})
        read = await read_file_tool().invoke({"path": "latin.txt", "encoding": "latin-1"})
    assert read["content"] == "café"
