"""run_shell, lint and test_runner: commands run ONLY in a bound sandbox, never on the host.

``bind_sandbox(executor)`` binds any sandbox executor (``async run(command, *,
workspace_dir, env=None, timeout_seconds=None)`` returning an object with
``exit_code``, ``stdout``, ``stderr``, ``duration_ms``) — the docker and
bubblewrap executors of ``avo-sandbox`` both fit. With none bound the tools
raise :class:`~avo_tools.errors.SandboxNotBoundError`. ``test_runner`` first
forgets the workspace's cached bytecode (see :func:`forget_workspace_bytecode`).
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import stat
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.models import ToolRisk
from avo.tools import FunctionTool
from avo_tools._build import build_tool
from avo_tools.sandbox_binding import SandboxRunner, bind_sandbox, current_sandbox
from avo_tools.workspace import PathLike, Workspace, current_workspace


class RunShellArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, description="Shell command run with sh -c in the sandbox.")
    timeout_seconds: float | None = Field(default=None, ge=0)


class LintArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str | None = None


class TestRunnerArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: str | None = Field(default=None, description="pytest target, e.g. tests/test_x.py::t")
    max_failures: int = Field(default=5, ge=1, le=50)


async def _sandboxed(tool: str, command: str, limit: float | None = None) -> tuple[Workspace, Any]:
    executor = current_sandbox(tool)
    workspace = current_workspace(tool)
    result = await executor.run(command, workspace_dir=workspace.root, timeout_seconds=limit)
    return workspace, result


async def _run_shell(args: RunShellArguments) -> dict[str, object]:
    _, result = await _sandboxed("run_shell", args.command, args.timeout_seconds or None)
    return {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "duration_ms": result.duration_ms,
    }


def _target(workspace: Workspace, target: str | None) -> str:
    if not target:
        return "."
    path, sep, node = target.partition("::")
    rel = workspace.relative(workspace.validate_path(path))
    # "./" so a file named like an option ("-x.py") is never read as one.
    return shlex.quote(f"./{rel}{sep}{node}" if rel != "." else ".")


async def _lint(args: LintArguments) -> dict[str, object]:
    workspace = current_workspace("lint")
    target = _target(workspace, args.path)
    command = (
        "if command -v ruff >/dev/null 2>&1; then echo 'linter: ruff'; "
        f"ruff check --no-cache --output-format=concise {target}; "
        f"else echo 'linter: compileall'; python3 -m compileall -q {target}; fi"
    )
    _, result = await _sandboxed("lint", command)
    first, _, rest = result.stdout.partition("\n")
    return {
        "linter": first.removeprefix("linter: ").strip(),
        "clean": result.exit_code == 0,
        "exit_code": result.exit_code,
        "output": (rest + result.stderr).strip(),
    }


_SUMMARY = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")


# Directories whose bytecode is not the workspace's own code (environments, VCS, tools).
_BYTECODE_SKIP = frozenset({".git", ".hg", ".venv", "venv", "node_modules", ".nox", ".tox"})


def forget_workspace_bytecode(workspace: Workspace) -> int:
    """Delete the cached bytecode of the workspace's own sources; return how many files.

    CPython (and pytest's assertion rewriter) trust a ``__pycache__`` file while
    the source's size and mtime *in whole seconds* are unchanged, so an edit
    that keeps the size within the same second runs the old code. An agent
    edits and re-runs tests within a second all the time, so the test runner
    starts from sources only (and runs with ``-B``, writing none). Only
    ``*.pyc`` files next to an existing ``.py`` source are removed; virtual
    environments (a ``pyvenv.cfg``) and tool directories are left alone, and
    no symlink is followed.
    """
    removed = 0
    for _, dirnames, filenames, dir_fd in os.fwalk(workspace.root, follow_symlinks=False):
        if "pyvenv.cfg" in filenames:
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if d not in _BYTECODE_SKIP]
        if "__pycache__" not in dirnames:
            continue
        sources = {name[:-3] for name in filenames if name.endswith(".py")}
        try:
            flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0)
            cache_fd = os.open("__pycache__", flags, dir_fd=dir_fd)
        except OSError:
            continue
        try:
            for name in os.listdir(cache_fd):
                if not name.endswith(".pyc") or name.split(".", 1)[0] not in sources:
                    continue
                try:
                    if stat.S_ISREG(os.stat(name, dir_fd=cache_fd, follow_symlinks=False).st_mode):
                        os.unlink(name, dir_fd=cache_fd)
                        removed += 1
                except OSError:
                    continue
        finally:
            os.close(cache_fd)
    return removed


async def _test_runner(args: TestRunnerArguments) -> dict[str, object]:
    workspace = current_workspace("test_runner")
    target = _target(workspace, args.target)
    await asyncio.to_thread(forget_workspace_bytecode, workspace)
    command = (
        "python3 -B -m pytest -q --no-header -p no:cacheprovider "
        f"--maxfail={args.max_failures} {target}"
    )
    _, result = await _sandboxed("test_runner", command)
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    lines = result.stdout.strip().splitlines()
    summary = lines[-1] if lines else ""
    for number, word in _SUMMARY.findall(summary):
        key = "errors" if word.startswith("error") else word
        if key in counts:
            counts[key] = int(number)
    return {
        "exit_code": result.exit_code,
        "success": result.exit_code == 0,
        **counts,
        "summary": summary,
        "output": result.stdout + result.stderr,
    }


def run_shell_tool(
    *, workspace: Workspace | PathLike | None = None, sandbox: SandboxRunner | None = None
) -> FunctionTool[RunShellArguments]:
    """Run a shell command in the bound sandbox (never on the host)."""
    return build_tool(
        name="run_shell",
        argument_kinds={"command": "command"},
        description=(
            "Run a shell command in an isolated sandbox (no network) with the workspace "
            "as the working directory. Returns exit_code, stdout, stderr."
        ),
        arguments_model=RunShellArguments,
        function=_run_shell,
        risk=ToolRisk.EXECUTE,
        workspace=workspace,
        sandbox=sandbox,
    )


def lint_tool(
    *, workspace: Workspace | PathLike | None = None, sandbox: SandboxRunner | None = None
) -> FunctionTool[LintArguments]:
    """Lint the workspace (ruff when present, else compileall) in the sandbox."""
    return build_tool(
        name="lint",
        argument_kinds={"path": "path"},
        description="Lint workspace Python code (ruff if available, else a syntax check).",
        arguments_model=LintArguments,
        function=_lint,
        risk=ToolRisk.INSPECT,
        workspace=workspace,
        sandbox=sandbox,
    )


def test_runner_tool(
    *, workspace: Workspace | PathLike | None = None, sandbox: SandboxRunner | None = None
) -> FunctionTool[TestRunnerArguments]:
    """Run pytest in the sandbox and summarise the outcome."""
    return build_tool(
        name="test_runner",
        argument_kinds={"target": "path"},
        description="Run the workspace's pytest suite (or one target) in the sandbox.",
        arguments_model=TestRunnerArguments,
        function=_test_runner,
        risk=ToolRisk.INSPECT,
        workspace=workspace,
        sandbox=sandbox,
    )


__all__ = [
    "LintArguments",
    "RunShellArguments",
    "SandboxRunner",
    "TestRunnerArguments",
    "bind_sandbox",
    "current_sandbox",
    "forget_workspace_bytecode",
    "lint_tool",
    "run_shell_tool",
    "test_runner_tool",
]
