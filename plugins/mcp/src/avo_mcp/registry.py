"""The tool registry ``avo serve-mcp`` serves by default."""

from __future__ import annotations

from avo.tools import ToolRegistry


def build_default_registry() -> ToolRegistry:
    """read_file, write_file, edit_file, glob, grep and git_status from avo-tools.

    The tools resolve paths against the workspace bound while they run; the MCP
    server binds its ``workspace_root`` around every ``tools/call``.
    """
    from avo_tools import (
        edit_file_tool,
        git_status_tool,
        glob_tool,
        grep_tool,
        read_file_tool,
        write_file_tool,
    )

    return ToolRegistry(
        [
            read_file_tool(),
            write_file_tool(),
            edit_file_tool(),
            glob_tool(),
            grep_tool(),
            git_status_tool(),
        ]
    )


__all__ = ["build_default_registry"]
