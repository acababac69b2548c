"""glob, grep, symbols, workspace_map — read-only views of the bound workspace."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from avo.models import ToolRisk
from avo.tools import FunctionTool
from avo_tools._build import build_tool
from avo_tools.errors import EditFileError, WorkspacePathError
from avo_tools.workspace import PathLike, Workspace, current_workspace

MAX_GREP_FILE_BYTES = 2_000_000
"""grep skips files larger than this."""
MAX_LINE_CHARS = 500
"""grep truncates each reported line to this many characters."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GlobArguments(_Args):
    pattern: str = Field(min_length=1, description="Glob such as '**/*.py' or '*.md'.")
    path: str = "."
    recursive: bool = True
    max_results: int = Field(default=200, gt=0, le=10_000)


class GrepArguments(_Args):
    pattern: str = Field(min_length=1, description="Python regular expression.")
    path: str = "."
    include_glob: str | None = None
    case_insensitive: bool = False
    max_results: int = Field(default=100, gt=0, le=10_000)
    context_lines: int = Field(default=0, ge=0, le=20)


class SymbolsArguments(_Args):
    path: str = "."
    symbol_name: str | None = None
    max_symbols: int = Field(default=200, gt=0, le=2000)


class WorkspaceMapArguments(_Args):
    include_map: bool = True
    include_recent: bool = True
    max_entries: int = Field(default=500, gt=0, le=5_000)
    recent_limit: int = Field(default=20, gt=0, le=200)


def _matches(rel: str, pattern: str, recursive: bool) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if not recursive and "/" in rel:
        return False
    if pattern.startswith("**/"):
        return fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern[3:])
    if "/" in pattern:
        return fnmatch.fnmatchcase(rel, pattern)
    return fnmatch.fnmatchcase(name, pattern)


def _literal_prefix(pattern: str) -> tuple[str, str]:
    """Split ``a/b/*.py`` into the literal directory part ``a/b`` and the rest ``*.py``."""
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if any(ch in part for ch in "*?[") or part in ("", ".", ".."):
            break
        literal.append(part)
    return "/".join(literal), "/".join(parts[len(literal) :])


def _glob(args: GlobArguments) -> dict[str, object]:
    workspace = current_workspace("glob")
    start = workspace.validate_path(args.path)
    pattern = args.pattern
    prefix, rest = _literal_prefix(pattern)
    if prefix:
        # Walk only below the literal directory part of the pattern.
        try:
            start = workspace.validate_path(start / prefix)
        except (OSError, WorkspacePathError):
            return {"pattern": args.pattern, "matches": [], "truncated": False}
        pattern = rest
    matches: list[str] = []
    truncated = False
    for path in workspace.iter_files(start):
        rel_to_start = path.relative_to(start).as_posix()
        if _matches(rel_to_start, pattern, args.recursive):
            if len(matches) >= args.max_results:
                truncated = True
                break
            matches.append(workspace.relative(path))
    return {"pattern": args.pattern, "matches": matches, "truncated": truncated}


def _read_text_quiet(workspace: Workspace, path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_GREP_FILE_BYTES:
            return None
        _, data, _ = workspace.read_bytes(path)
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def _grep(args: GrepArguments) -> dict[str, object]:
    workspace = current_workspace("grep")
    try:
        regex = re.compile(args.pattern, re.IGNORECASE if args.case_insensitive else 0)
    except re.error as exc:
        raise EditFileError(f"invalid regular expression {args.pattern!r}: {exc}") from None
    start = workspace.validate_path(args.path)
    matches: list[dict[str, object]] = []
    truncated = False
    for path in workspace.iter_files(start):
        rel = workspace.relative(path)
        if args.include_glob and not _matches(rel, args.include_glob, True):
            continue
        text = _read_text_quiet(workspace, path)
        if text is None:
            continue
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            if not regex.search(line):
                continue
            if len(matches) >= args.max_results:
                truncated = True
                break
            match: dict[str, object] = {"path": rel, "line": number, "text": line[:MAX_LINE_CHARS]}
            if args.context_lines:
                low = max(0, number - 1 - args.context_lines)
                match["before"] = [x[:MAX_LINE_CHARS] for x in lines[low : number - 1]]
                match["after"] = [
                    x[:MAX_LINE_CHARS] for x in lines[number : number + args.context_lines]
                ]
            matches.append(match)
        if truncated:
            break
    return {"pattern": args.pattern, "matches": matches, "truncated": truncated}


def _python_symbols(tree: ast.AST) -> list[tuple[str, str, int]]:
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                found.append((prefix + child.name, "class", child.lineno))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                kind = "method" if prefix else "function"
                found.append((prefix + child.name, kind, child.lineno))

    visit(tree, "")
    return found


def _symbols(args: SymbolsArguments) -> dict[str, object]:
    workspace = current_workspace("symbols")
    start = workspace.validate_path(args.path)
    symbols: list[dict[str, object]] = []
    truncated = False
    for path in workspace.iter_files(start):
        if path.suffix not in {".py", ".pyi"}:
            continue
        text = _read_text_quiet(workspace, path)
        if text is None:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for name, kind, line in _python_symbols(tree):
            if args.symbol_name and args.symbol_name not in name.rsplit(".", 1)[-1]:
                continue
            if len(symbols) >= args.max_symbols:
                truncated = True
                break
            symbols.append(
                {"name": name, "kind": kind, "path": workspace.relative(path), "line": line}
            )
        if truncated:
            break
    return {"symbols": symbols, "truncated": truncated}


def _workspace_map(args: WorkspaceMapArguments) -> dict[str, object]:
    workspace = current_workspace("workspace_map")
    files: list[tuple[str, int, float]] = []
    for path in workspace.iter_files(workspace.root):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        files.append((workspace.relative(path), info.st_size, info.st_mtime))
    result: dict[str, object] = {"root": str(workspace.root), "total_files": len(files)}
    if args.include_map:
        result["files"] = [{"path": p, "size": s} for p, s, _ in files[: args.max_entries]]
        result["truncated"] = len(files) > args.max_entries
    if args.include_recent:
        recent = sorted(files, key=lambda item: item[2], reverse=True)[: args.recent_limit]
        result["recent"] = [p for p, _, _ in recent]
    return result


def glob_tool(*, workspace: Workspace | PathLike | None = None) -> FunctionTool[GlobArguments]:
    """Find workspace files by glob pattern."""
    return build_tool(
        name="glob",
        argument_kinds={"path": "path"},
        description="List workspace files matching a glob pattern (e.g. '**/*.py').",
        arguments_model=GlobArguments,
        function=_glob,
        risk=ToolRisk.INSPECT,
        workspace=workspace,
    )


def grep_tool(*, workspace: Workspace | PathLike | None = None) -> FunctionTool[GrepArguments]:
    """Search workspace files with a regular expression."""
    return build_tool(
        name="grep",
        argument_kinds={"path": "path", "pattern": "text"},
        description="Search workspace text files for a Python regular expression.",
        arguments_model=GrepArguments,
        function=_grep,
        risk=ToolRisk.INSPECT,
        workspace=workspace,
    )


def symbols_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[SymbolsArguments]:
    """List Python classes, functions and methods."""
    return build_tool(
        name="symbols",
        argument_kinds={"path": "path"},
        description="List Python classes/functions/methods with their file and line.",
        arguments_model=SymbolsArguments,
        function=_symbols,
        risk=ToolRisk.INSPECT,
        workspace=workspace,
    )


def workspace_map_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[WorkspaceMapArguments]:
    """Map the workspace: files with sizes and the most recently changed ones."""
    return build_tool(
        name="workspace_map",
        description="Map the workspace: files with sizes and the most recently modified files.",
        arguments_model=WorkspaceMapArguments,
        function=_workspace_map,
        risk=ToolRisk.INSPECT,
        workspace=workspace,
    )


__all__ = [
    "GlobArguments",
    "GrepArguments",
    "SymbolsArguments",
    "WorkspaceMapArguments",
    "glob_tool",
    "grep_tool",
    "symbols_tool",
    "workspace_map_tool",
]
