"""read_file, write_file, edit_file, batch_replace — bound to ``bind_workspace``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from avo.models import ToolRisk
from avo.tools import FunctionTool
from avo_tools._build import build_tool
from avo_tools.errors import EditFileError, NotTextError
from avo_tools.workspace import PathLike, Workspace, bind_workspace, current_workspace

MAX_READ_BYTES = 1_048_576
"""read_file reads at most this many bytes of a file."""
MAX_READ_CHARS = 100_000
"""read_file content is capped (head + tail) at this many characters."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArguments(_Args):
    path: str = Field(min_length=1, description="Path relative to the workspace root.")
    encoding: str = "utf-8"


class WriteFileArguments(_Args):
    path: str = Field(min_length=1, description="Path relative to the workspace root.")
    content: str
    encoding: str = "utf-8"


class EditFileArguments(_Args):
    path: str = Field(min_length=1)
    old_string: str = Field(min_length=1, description="Exact text to replace.")
    new_string: str
    replace_all: bool = False

    @model_validator(mode="after")
    def _differ(self) -> EditFileArguments:
        if self.old_string == self.new_string:
            raise ValueError("old_string and new_string must differ")
        return self


class FilePatch(_Args):
    path: str = Field(min_length=1)
    old_string: str = Field(min_length=1)
    new_string: str
    replace_all: bool = False


class BatchReplaceArguments(_Args):
    patches: list[FilePatch] = Field(min_length=1)
    dry_run: bool = False


def _decode(data: bytes, encoding: str, path: str, *, reading: bool = False) -> str:
    try:
        return data.decode(encoding)
    except LookupError:
        raise EditFileError(f"unknown encoding {encoding!r}; use e.g. 'utf-8'") from None
    except UnicodeDecodeError:
        if reading:
            binary = b"\x00" in data[:8192]
            raise NotTextError(
                f"{path} is not {encoding} text"
                + (
                    " (it looks like a binary file); read_file reads text files only"
                    if binary
                    else ""
                )
                + "; if it is text in another encoding, pass encoding (e.g. 'latin-1')"
            ) from None
        raise EditFileError(
            f"{path} is not valid {encoding} text; pass the right encoding"
        ) from None


def _read_file(args: ReadFileArguments) -> dict[str, object]:
    workspace = current_workspace("read_file")
    resolved, data, size = workspace.read_bytes(args.path, limit=MAX_READ_BYTES)
    rel = workspace.relative(resolved)
    content = (
        _decode(data, args.encoding, rel, reading=True)
        if size <= MAX_READ_BYTES
        else data.decode(args.encoding, errors="replace")
    )
    return {"path": rel, "size": size, "content": content, "truncated": size > MAX_READ_BYTES}


def _write_file(args: WriteFileArguments) -> dict[str, object]:
    workspace = current_workspace("write_file")
    data = args.content.encode(args.encoding)
    resolved = workspace.write_bytes(args.path, data)
    return {"path": workspace.relative(resolved), "bytes_written": len(data)}


def _replace(text: str, old: str, new: str, *, replace_all: bool, path: str) -> tuple[str, int]:
    count = text.count(old)
    if count == 0:
        raise EditFileError(f"old_string not found in {path}; read the file and copy it exactly")
    if count > 1 and not replace_all:
        raise EditFileError(
            f"old_string occurs {count} times in {path}; pass replace_all=true "
            "or include more surrounding text so it is unique"
        )
    return text.replace(old, new) if replace_all else text.replace(old, new, 1), (
        count if replace_all else 1
    )


def _read_text(workspace: Workspace, path: str) -> tuple[str, str]:
    resolved, data, size = workspace.read_bytes(path, limit=MAX_READ_BYTES + 1)
    rel = workspace.relative(resolved)
    if size > MAX_READ_BYTES:
        raise EditFileError(f"{rel} is larger than {MAX_READ_BYTES} bytes; edit it in parts")
    return rel, _decode(data, "utf-8", rel)


def _edit_file(args: EditFileArguments) -> dict[str, object]:
    workspace = current_workspace("edit_file")
    rel, text = _read_text(workspace, args.path)
    updated, count = _replace(
        text, args.old_string, args.new_string, replace_all=args.replace_all, path=rel
    )
    workspace.write_bytes(rel, updated.encode("utf-8"))
    return {"path": rel, "replacements": count}


def _batch_replace(args: BatchReplaceArguments) -> dict[str, object]:
    workspace = current_workspace("batch_replace")
    contents: dict[str, str] = {}
    results: list[dict[str, object]] = []
    # Plan every patch first (all-or-nothing): nothing is written if one fails.
    for patch in args.patches:
        workspace.validate_for_write(patch.path)
        rel = workspace.relative(workspace.validate_path(patch.path))
        if rel not in contents:
            contents[rel] = _read_text(workspace, rel)[1]
        contents[rel], count = _replace(
            contents[rel],
            patch.old_string,
            patch.new_string,
            replace_all=patch.replace_all,
            path=rel,
        )
        results.append({"path": rel, "replacements": count})
    if not args.dry_run:
        for rel, text in contents.items():
            workspace.write_bytes(rel, text.encode("utf-8"))
    return {"dry_run": args.dry_run, "files": sorted(contents), "patches": results}


def read_file_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[ReadFileArguments]:
    """Read a UTF-8 text file inside the bound workspace."""
    return build_tool(
        name="read_file",
        argument_kinds={"path": "path"},
        description="Read a text file in the workspace. Returns {path, size, content}.",
        arguments_model=ReadFileArguments,
        function=_read_file,
        risk=ToolRisk.INSPECT,
        max_chars=MAX_READ_CHARS,
        workspace=workspace,
    )


def write_file_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[WriteFileArguments]:
    """Create or overwrite a file inside the bound workspace."""
    return build_tool(
        name="write_file",
        argument_kinds={"path": "path", "content": "text"},
        description="Create or overwrite a file in the workspace (parents are created).",
        arguments_model=WriteFileArguments,
        function=_write_file,
        risk=ToolRisk.MODIFY,
        workspace=workspace,
    )


def edit_file_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[EditFileArguments]:
    """Replace an exact string in a file inside the bound workspace."""
    return build_tool(
        name="edit_file",
        argument_kinds={"path": "path", "old_string": "text", "new_string": "text"},
        description=(
            "Replace old_string with new_string in a workspace file. old_string must be "
            "unique unless replace_all is true."
        ),
        arguments_model=EditFileArguments,
        function=_edit_file,
        risk=ToolRisk.MODIFY,
        workspace=workspace,
    )


def batch_replace_tool(
    *, workspace: Workspace | PathLike | None = None
) -> FunctionTool[BatchReplaceArguments]:
    """Apply several exact-string patches, all or nothing."""
    return build_tool(
        name="batch_replace",
        argument_kinds={
            "patches[].path": "path",
            "patches[].old_string": "text",
            "patches[].new_string": "text",
        },
        description="Apply several exact-string replacements across files, all or nothing.",
        arguments_model=BatchReplaceArguments,
        function=_batch_replace,
        risk=ToolRisk.MODIFY,
        workspace=workspace,
    )


__all__ = [
    "BatchReplaceArguments",
    "EditFileArguments",
    "FilePatch",
    "ReadFileArguments",
    "WriteFileArguments",
    "batch_replace_tool",
    "bind_workspace",
    "edit_file_tool",
    "read_file_tool",
    "write_file_tool",
]
