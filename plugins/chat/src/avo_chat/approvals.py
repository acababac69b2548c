"""What an approval shows (the diff a write would make, the command a shell would run)
and what an answer typed at it means.

The run is already paused durably when the question appears (the kernel's
pause for a person), so whatever happens at the prompt loses nothing: an
answer continues the turn, Ctrl-C leaves it paused for ``avo resume`` or
``avo runs approve|deny``.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from avo.approval import Answer, HumanRequest
    from avo.models import ToolMetadata

MAX_PREVIEW_LINES = 60
MAX_FILE_BYTES = 2_000_000


@dataclass(frozen=True)
class Preview:
    """What a person sees before answering: a title, why, and a diff, command or arguments."""

    title: str
    kind: str  # "diff" | "command" | "arguments" | "question"
    body: str
    reason: str = ""
    model_reason: str = ""
    choices: tuple[str, ...] = ()
    form: dict[str, Any] | None = None
    """A tool's question with a form (an MCP server's elicitation): the answer's schema."""


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _inside(workspace: Path, relative: str) -> Path | None:
    target = (workspace / relative).resolve()
    root = workspace.resolve()
    return target if target == root or root in target.parents else None


def _diff(path: str, before: str | None, after: str) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}" if before is not None else "/dev/null",
        tofile=f"b/{path}",
        n=2,
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return text or f"(no change to {path})\n"


def _edit(current: str | None, old: str, new: str, replace_all: bool) -> str | None:
    if current is None or old not in current:
        return None
    return current.replace(old, new) if replace_all else current.replace(old, new, 1)


def _clip(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_PREVIEW_LINES:
        return text
    hidden = len(lines) - MAX_PREVIEW_LINES
    return "\n".join(lines[:MAX_PREVIEW_LINES]) + f"\n… {hidden} more lines\n"


def _file_changes(arguments: dict[str, Any], workspace: Path) -> str | None:
    """A unified diff for write_file / edit_file / batch_replace shaped arguments."""
    patches: list[dict[str, Any]] = []
    if isinstance(arguments.get("patches"), list):
        patches = [p for p in arguments["patches"] if isinstance(p, dict)]
    elif isinstance(arguments.get("path"), str) and (
        "content" in arguments or "old_string" in arguments
    ):
        patches = [arguments]
    if not patches:
        return None
    out: list[str] = []
    for patch in patches:
        relative = str(patch.get("path", ""))
        target = _inside(workspace, relative)
        if target is None:
            out.append(f"{relative}: outside the workspace\n")
            continue
        before = _read(target) if target.is_file() else None
        if isinstance(patch.get("content"), str):
            after: str | None = patch["content"]
        else:
            after = _edit(
                before,
                str(patch.get("old_string", "")),
                str(patch.get("new_string", "")),
                bool(patch.get("replace_all")),
            )
        if after is None:
            out.append(f"{relative}: the text to replace is not in the file (the call will fail)\n")
        else:
            out.append(_diff(relative, before, after))
    return "".join(out)


def preview(
    request: HumanRequest, workspace: Path, metadata: ToolMetadata | None = None
) -> Preview:
    """What to show for ``request``: a diff for file edits, the command for shells."""
    from avo.approval import RequestKind

    if request.kind is RequestKind.QUESTION:
        body = request.question or ""
        if request.schema is not None:
            from avo.forms import describe_form

            body += f"\nfields: {describe_form(request.schema)} (a JSON object; 'decline' refuses)"
        return Preview(
            title=f"{request.tool_name} asks",
            kind="question",
            body=body,
            choices=request.choices,
            form=request.schema,
        )
    arguments = dict(request.arguments)
    kinds = dict(metadata.argument_kinds) if metadata is not None else {}
    commands = [k for k, kind in kinds.items() if str(kind) == "command" and k in arguments]
    if not commands and isinstance(arguments.get("command"), str):
        commands = ["command"]
    changes = _file_changes(arguments, workspace)
    if changes is not None:
        paths = [str(p.get("path")) for p in arguments.get("patches") or [arguments]]
        title, kind, body = f"{request.tool_name} {', '.join(paths)}", "diff", changes
    elif commands:
        command = str(arguments[commands[0]])
        title, kind, body = f"{request.tool_name}", "command", command
    else:
        body = json.dumps(arguments, indent=2, ensure_ascii=False, sort_keys=True)
        title, kind = request.tool_name, "arguments"
    return Preview(
        title=title,
        kind=kind,
        body=_clip(body),
        reason=request.reason,
        model_reason=request.model_reason or "",
    )


YES = {"y", "yes"}
NO = {"", "n", "no"}
ALWAYS = {"a", "always"}
ALWAYS_REASON = "always allowed in this chat"


def parse_approval(text: str | None) -> Answer | None:
    """``y``/``yes`` approves; ``n``/``no``/empty denies; other text denies with it as the reason.

    ``a``/``always`` approves and asks the chat to approve the same tool from now
    on (the answer's reason is :data:`ALWAYS_REASON`, recorded with each approval).
    None (Ctrl-C, end of input) is no answer: the run stays paused.
    """
    from avo.approval import Answer

    if text is None:
        return None
    word = text.strip()
    if word.lower() in YES:
        return Answer.approve(by="chat")
    if word.lower() in ALWAYS:
        return Answer.approve(ALWAYS_REASON, by="chat")
    if word.lower() in NO:
        return Answer.deny("the user said no in the chat", by="chat")
    return Answer.deny(word, by="chat")


def parse_reply(
    text: str | None, choices: tuple[str, ...], form: dict[str, Any] | None = None
) -> Answer | str | None:
    """An answer to a question; a string is a hint to show before asking again.

    With a ``form`` (a tool's question), the reply must fit it (checked here, so
    a misfit is said and asked again); ``decline`` declines.
    """
    from avo.approval import Answer

    if text is None:
        return None
    word = text.strip()
    if form is not None:
        from avo.forms import form_content

        if word.lower() == "decline":
            return Answer.deny("declined in the chat", by="chat")
        try:
            form_content(form, word)
        except ValueError as exc:
            return str(exc)
        return Answer.reply(word, by="chat")
    if choices:
        if word.isdigit() and 1 <= int(word) <= len(choices):
            return Answer.reply(choices[int(word) - 1], by="chat")
        if word in choices:
            return Answer.reply(word, by="chat")
        return f"pick 1-{len(choices)} or type one of the choices"
    return Answer.reply(word, by="chat") if word else "type an answer (Ctrl-C leaves it waiting)"


__all__ = ["ALWAYS_REASON", "Preview", "parse_approval", "parse_reply", "preview"]
