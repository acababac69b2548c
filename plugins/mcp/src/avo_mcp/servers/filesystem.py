"""``python -m avo_mcp.servers.filesystem --root DIR``: files of one workspace.

Every path is resolved inside ``--root`` by avo-tools' workspace containment
(escapes, symlinks out of the root and null bytes are refused); the files are
also listed as ``avo://workspace/`` resources.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.models import ToolRisk
from avo.tools import FunctionTool, ToolRegistry

MAX_ENTRIES = 1000


class ListDirectoryArguments(BaseModel):
    """Arguments of ``list_directory``."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(default=".", min_length=1)


def _list_directory(args: ListDirectoryArguments) -> dict[str, Any]:
    from avo_tools import current_workspace

    workspace = current_workspace("list_directory")
    directory = workspace.validate_path(args.path)
    if not directory.is_dir():
        raise NotADirectoryError(f"{args.path} is not a directory")
    entries = []
    for child in sorted(directory.iterdir(), key=lambda p: p.name)[:MAX_ENTRIES]:
        kind = "symlink" if child.is_symlink() else "directory" if child.is_dir() else "file"
        entries.append({"name": child.name, "type": kind})
    return {"path": workspace.relative(directory) or ".", "entries": entries}


def build_registry() -> ToolRegistry:
    """read_file, write_file, edit_file, list_directory, glob, grep."""
    from avo_tools import edit_file_tool, glob_tool, grep_tool, read_file_tool, write_file_tool

    return ToolRegistry(
        [
            read_file_tool(),
            write_file_tool(),
            edit_file_tool(),
            FunctionTool(
                name="list_directory",
                description="List the entries of a workspace directory (name and type).",
                arguments_model=ListDirectoryArguments,
                function=_list_directory,
                risk=ToolRisk.INSPECT,
            ),
            glob_tool(),
            grep_tool(),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Serve the filesystem tools for ``--root`` on stdio."""
    parser = argparse.ArgumentParser(prog="python -m avo_mcp.servers.filesystem")
    parser.add_argument("--root", type=Path, required=True, help="workspace directory")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root} is not a directory")
    from avo_mcp.servers._stdio import serve

    return serve(build_registry(), name="filesystem", workspace_root=args.root)


if __name__ == "__main__":
    raise SystemExit(main())
