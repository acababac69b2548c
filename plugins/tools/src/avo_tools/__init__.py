"""avo application tools: workspace-bound file, search, git, lint/test,
plan, subagent, web and sandboxed shell tools, each a plugin in ``avo.tools``.

Workspace tools resolve their root from :func:`bind_workspace`; ``run_shell``
(and lint/test_runner) run only in the executor bound with :func:`bind_sandbox`.
"""

from __future__ import annotations

from avo_tools.ask_tool import ask_user_tool
from avo_tools.errors import (
    EditFileError,
    EgressDeniedError,
    NotTextError,
    SandboxNotBoundError,
    WorkspaceNotBoundError,
    WorkspacePathError,
)
from avo_tools.file_tools import (
    batch_replace_tool,
    edit_file_tool,
    read_file_tool,
    write_file_tool,
)
from avo_tools.git_tools import git_commit_tool, git_diff_tool, git_status_tool
from avo_tools.search_tools import glob_tool, grep_tool, symbols_tool, workspace_map_tool
from avo_tools.shell_tool import bind_sandbox, lint_tool, run_shell_tool, test_runner_tool
from avo_tools.workspace import Workspace, bind_workspace, current_workspace, validate_path

__all__ = [
    "EditFileError",
    "EgressDeniedError",
    "NotTextError",
    "SandboxNotBoundError",
    "Workspace",
    "WorkspaceNotBoundError",
    "WorkspacePathError",
    "ask_user_tool",
    "batch_replace_tool",
    "bind_sandbox",
    "bind_workspace",
    "current_workspace",
    "edit_file_tool",
    "git_commit_tool",
    "git_diff_tool",
    "git_status_tool",
    "glob_tool",
    "grep_tool",
    "lint_tool",
    "read_file_tool",
    "run_shell_tool",
    "symbols_tool",
    "test_runner_tool",
    "validate_path",
    "workspace_map_tool",
    "write_file_tool",
]
