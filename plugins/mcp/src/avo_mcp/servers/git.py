"""``python -m avo_mcp.servers.git --repo DIR``: read-only, bounded git wrappers.

``git_status`` and ``git_diff`` are avo-tools' tools bound to ``--repo``;
``git_log`` runs ``git log`` with a hard timeout, a commit cap, no pager, no
external diff/textconv and hooks/fsmonitor disabled.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.exceptions import ToolExecutionError
from avo.models import ToolRisk
from avo.tools import FunctionTool, ToolRegistry

GIT_TIMEOUT_SECONDS = 10.0
_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "--no-pager")
_FIELD = "\x1f"


class GitLogArguments(BaseModel):
    """Arguments of ``git_log``."""

    model_config = ConfigDict(extra="forbid")
    max_count: int = Field(default=20, gt=0, le=500)
    path: str | None = None


async def run_git(repo: Path, *args: str, timeout_seconds: float = GIT_TIMEOUT_SECONDS) -> str:
    """Run one git command in ``repo`` (no shell), killing it after the timeout."""
    env = {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *_SAFE_CONFIG,
            *args,
            cwd=repo,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise ToolExecutionError("git is not installed on this machine") from None
    try:
        async with asyncio.timeout(timeout_seconds):
            stdout, stderr = await process.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise ToolExecutionError(f"git {args[0]} took longer than {timeout_seconds:g}s") from None
    if process.returncode != 0:
        message = stderr.decode("utf-8", "replace").strip()
        raise ToolExecutionError(f"git {args[0]} failed: {message}")
    return stdout.decode("utf-8", "replace")


def git_log_tool(repo: Path) -> FunctionTool[GitLogArguments]:
    """The ``git_log`` tool for one repository."""

    async def git_log(args: GitLogArguments) -> dict[str, Any]:
        argv = [
            "log",
            f"--max-count={args.max_count}",
            f"--format=%H{_FIELD}%an{_FIELD}%aI{_FIELD}%s",
        ]
        if args.path:
            from avo_tools import Workspace

            target = Workspace(repo).validate_path(args.path, must_exist=False)
            argv += ["--", str(target.relative_to(repo))]
        out = await run_git(repo, *argv)
        commits = []
        for line in out.splitlines():
            sha, author, date, subject = [*line.split(_FIELD), "", "", ""][:4]
            commits.append({"sha": sha, "author": author, "date": date, "subject": subject})
        return {"commits": commits}

    return FunctionTool(
        name="git_log",
        description="Recent commits (sha, author, ISO date, subject), newest first.",
        arguments_model=GitLogArguments,
        function=git_log,
        risk=ToolRisk.INSPECT,
    )


def build_registry(repo: Path) -> ToolRegistry:
    """git_status, git_diff and git_log for ``repo``."""
    from avo_tools import git_diff_tool, git_status_tool

    return ToolRegistry([git_status_tool(), git_diff_tool(), git_log_tool(repo)])


def main(argv: list[str] | None = None) -> int:
    """Serve the git tools for ``--repo`` on stdio."""
    parser = argparse.ArgumentParser(prog="python -m avo_mcp.servers.git")
    parser.add_argument("--repo", type=Path, default=Path("."), help="repository directory")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    if not repo.is_dir():
        parser.error(f"--repo {repo} is not a directory")
    from avo_mcp.servers._stdio import serve
    from avo_tools import bind_workspace

    return serve(build_registry(repo), name="git", tool_context=lambda: bind_workspace(repo))


if __name__ == "__main__":
    raise SystemExit(main())
