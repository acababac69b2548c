"""git_status, git_diff, git_commit: bounded git against the bound workspace's repository.

These are the only subprocesses avo runs on the host: fixed
argv, ``shell=False``, a timeout, no terminal prompts. Because the repository's
own config is workspace-controlled, every call disables the settings that would
let it run a program on the host: hooks, fsmonitor, external diff drivers,
textconv filters and pagers.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from avo.exceptions import ToolExecutionError
from avo.models import ToolRisk
from avo.tools import FunctionTool
from avo_tools._build import build_tool
from avo_tools.workspace import PathLike, Workspace, current_workspace

GIT_TIMEOUT_SECONDS = 30.0
_SAFE_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "diff.external=",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "protocol.allow=never",
)
_CONVENTIONAL = re.compile(
    r"^(feat|fix|docs|style|refactor|perf|test|build|ci|chore|revert)(\([\w./-]+\))?!?: \S.*"
)


class GitStatusArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_untracked: bool = True
    max_files: int = Field(default=20, gt=0, le=500)


class GitDiffArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str | None = None
    staged: bool = False
    max_lines: int = Field(default=500, gt=0, le=5_000)


class GitCommitArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, description="Conventional Commits, e.g. 'fix: ...'")
    paths: list[str] | None = None

    @field_validator("message")
    @classmethod
    def _conventional(cls, value: str) -> str:
        if not _CONVENTIONAL.match(value.splitlines()[0] if value else ""):
            raise ValueError(
                f"commit message {value.splitlines()[0]!r} is not a Conventional Commit; "
                "start it with e.g. 'fix: ', 'feat(scope): ' or 'docs: '"
            )
        return value


def _git(workspace: Workspace, args: Sequence[str]) -> str:
    env = {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "avo",
        "GIT_AUTHOR_EMAIL": "avo@localhost",
        "GIT_COMMITTER_NAME": "avo",
        "GIT_COMMITTER_EMAIL": "avo@localhost",
        "HOME": str(workspace.root),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    try:
        completed = subprocess.run(
            ["git", *_SAFE_CONFIG, *args],
            cwd=workspace.root,
            env=env,
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        raise ToolExecutionError("git is not installed on this machine") from None
    except subprocess.TimeoutExpired:
        raise ToolExecutionError(f"git {args[0]} took longer than {GIT_TIMEOUT_SECONDS}s") from None
    if completed.returncode != 0:
        stderr = completed.stderr.decode("utf-8", "replace").strip()
        raise ToolExecutionError(f"git {args[0]} failed: {stderr}")
    return completed.stdout.decode("utf-8", "replace")


def _git_status(args: GitStatusArguments) -> dict[str, object]:
    workspace = current_workspace("git_status")
    untracked = "--untracked-files=all" if args.include_untracked else "--untracked-files=no"
    out = _git(workspace, ["status", "--porcelain=v1", "--branch", untracked])
    lines = out.splitlines()
    branch = lines[0][3:] if lines and lines[0].startswith("## ") else ""
    entries = [{"status": line[:2].strip(), "path": line[3:]} for line in lines[1:]]
    return {
        "branch": branch,
        "clean": not entries,
        "files": entries[: args.max_files],
        "total_files": len(entries),
        "truncated": len(entries) > args.max_files,
    }


def _git_diff(args: GitDiffArguments) -> dict[str, object]:
    workspace = current_workspace("git_diff")
    argv = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"]
    if args.staged:
        argv.append("--cached")
    if args.path:
        argv += ["--", workspace.relative(workspace.validate_path(args.path, must_exist=False))]
    lines = _git(workspace, argv).splitlines()
    return {
        "diff": "\n".join(lines[: args.max_lines]),
        "total_lines": len(lines),
        "truncated": len(lines) > args.max_lines,
    }


def _git_commit(args: GitCommitArguments) -> dict[str, object]:
    workspace = current_workspace("git_commit")
    if args.paths:
        rels = [
            workspace.relative(workspace.validate_path(p, must_exist=False)) for p in args.paths
        ]
        _git(workspace, ["add", "--", *rels])
    else:
        _git(workspace, ["add", "-A"])
    _git(workspace, ["commit", "--no-verify", "-q", "-m", args.message])
    sha = _git(workspace, ["rev-parse", "HEAD"]).strip()
    files = _git(workspace, ["show", "--name-only", "--format=", "HEAD"]).split()
    return {"commit": sha, "message": args.message, "files": files}


def git_status_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[GitStatusArguments]:
    """Show the workspace repository's status."""
    return build_tool(
        name="git_status",
        description="Show git status of the workspace repository (branch, changed files).",
        arguments_model=GitStatusArguments,
        function=_git_status,
        risk=ToolRisk.INSPECT,
        workspace=workspace,
    )


def git_diff_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[GitDiffArguments]:
    """Show the workspace repository's diff."""
    return build_tool(
        name="git_diff",
        argument_kinds={"path": "path"},
        description="Show the git diff of the workspace (optionally one path, or staged).",
        arguments_model=GitDiffArguments,
        function=_git_diff,
        risk=ToolRisk.INSPECT,
        workspace=workspace,
    )


def git_commit_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[GitCommitArguments]:
    """Commit workspace changes with a Conventional Commits message."""
    return build_tool(
        name="git_commit",
        argument_kinds={"message": "text", "paths[]": "path"},
        description="Stage all (or the given) paths and commit with a Conventional Commit.",
        arguments_model=GitCommitArguments,
        function=_git_commit,
        risk=ToolRisk.MODIFY,
        workspace=workspace,
    )


__all__ = [
    "GitCommitArguments",
    "GitDiffArguments",
    "GitStatusArguments",
    "git_commit_tool",
    "git_diff_tool",
    "git_status_tool",
]
