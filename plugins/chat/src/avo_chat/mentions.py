"""``@file`` and ``@dir`` mentions: attach workspace content to a message.

``explain @src/app.py`` sends the message as typed plus the file's text in an
``<attached>`` block; ``@src/`` attaches a listing of the directory (two
levels). Only paths inside the workspace are attached; a word starting with
``@`` that names nothing there (an e-mail address, a decorator) is left as it
is. Large files are cut with a note saying so, binary files are named only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from avo_chat.undo import SKIP_DIRS

MENTION = re.compile(r"(?<![\w@\\])@((?:[\w.\-~/]|\\ )+)")
MAX_FILE_CHARS = 60_000
MAX_LISTING = 300


@dataclass(frozen=True)
class Attachment:
    """Text offered to the next turn: a mentioned file, a command's output."""

    label: str
    text: str

    def block(self) -> str:
        """The attachment as the model reads it."""
        body = self.text if self.text.endswith("\n") else self.text + "\n"
        return f'<attached source="{self.label}">\n{body}</attached>'


def _inside(workspace: Path, text: str) -> Path | None:
    target = (workspace / text.replace("\\ ", " ")).resolve()
    root = workspace.resolve()
    if target != root and root not in target.parents:
        return None
    return target if target.exists() else None


def _file(path: Path, label: str) -> Attachment:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Attachment(label, f"(could not be read: {exc.strerror})")
    if b"\0" in data[:8192]:
        return Attachment(label, f"(a binary file of {len(data)} bytes; not attached)")
    text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_FILE_CHARS:
        cut = len(text) - MAX_FILE_CHARS
        text = text[:MAX_FILE_CHARS] + f"\n… ({cut} more characters not attached)"
    return Attachment(label, text)


def _listing(path: Path, workspace: Path, label: str) -> Attachment:
    lines: list[str] = []
    root = workspace.resolve()

    def walk(directory: Path, depth: int) -> None:
        try:
            entries = sorted(directory.iterdir(), key=lambda p: (not p.is_dir(), p.name))
        except OSError:
            return
        for entry in entries:
            if len(lines) >= MAX_LISTING:
                return
            if entry.name in SKIP_DIRS:
                continue
            relative = entry.relative_to(root).as_posix()
            lines.append(relative + ("/" if entry.is_dir() else ""))
            if entry.is_dir() and depth < 2:
                walk(entry, depth + 1)

    walk(path, 1)
    if len(lines) >= MAX_LISTING:
        lines.append(f"… (listing cut at {MAX_LISTING} entries)")
    return Attachment(label, "\n".join(lines) or "(empty directory)")


def expand(text: str, workspace: Path) -> tuple[str, list[Attachment]]:
    """The message and what its mentions attach (each path once, in order)."""
    found: list[Attachment] = []
    seen: set[Path] = set()
    for match in MENTION.finditer(text):
        raw = match.group(1).rstrip(".,;:!?)")
        target = _inside(workspace, raw)
        if target is None or target in seen:
            continue
        seen.add(target)
        label = target.relative_to(workspace.resolve()).as_posix() or "."
        if target.is_dir():
            found.append(_listing(target, workspace, label + "/"))
        else:
            found.append(_file(target, label))
    return text, found


def compose_message(text: str, attachments: list[Attachment]) -> str:
    """What the model receives: the message, then each attachment block."""
    if not attachments:
        return text
    return text + "\n\n" + "\n\n".join(item.block() for item in attachments)


def complete(workspace: Path, prefix: str, limit: int = 50) -> list[str]:
    """Workspace paths starting with ``prefix`` (directories end with ``/``)."""
    base, _, partial = prefix.rpartition("/")
    directory = _inside(workspace, base) if base else workspace.resolve()
    if directory is None or not directory.is_dir():
        return []
    out: list[str] = []
    try:
        entries = sorted(directory.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    for entry in entries:
        if entry.name.startswith(partial) and entry.name not in SKIP_DIRS:
            if entry.name.startswith(".") and not partial.startswith("."):
                continue
            name = (base + "/" if base else "") + entry.name
            out.append(name + ("/" if entry.is_dir() else ""))
            if len(out) >= limit:
                break
    return out


__all__ = ["Attachment", "complete", "compose_message", "expand"]
