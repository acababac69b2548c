"""Where the chat keeps its own files: input history, drafts and undo journals, per workspace.

``AVO_CHAT_STATE_DIR`` if set, else ``$XDG_STATE_HOME/avo/chat``, else
``~/.local/state/avo/chat``; inside it one directory per workspace (named
after the workspace's path and a short hash of it). Runs, sessions and costs
are never kept here: they are in the event store.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

STATE_ENV = "AVO_CHAT_STATE_DIR"


def state_root(environ: Mapping[str, str]) -> Path:
    """The chat's state directory for every workspace."""
    explicit = environ.get(STATE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = environ.get("XDG_STATE_HOME")
    if xdg:
        return Path(xdg) / "avo" / "chat"
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".local" / "state" / "avo" / "chat"


def workspace_dir(environ: Mapping[str, str], workspace: Path) -> Path:
    """The state directory of one workspace (history, drafts, undo journals)."""
    resolved = str(workspace.resolve())
    tag = re.sub(r"[^A-Za-z0-9._-]+", "-", resolved.strip("/"))[-40:] or "root"
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:10]
    return state_root(environ) / f"{tag}-{digest}"


class Drafts:
    """A prompt kept for later (``/draft save``), restored into the input next time."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "draft.txt"

    def read(self) -> str:
        """The kept draft ('' when none)."""
        try:
            return self.path.read_text(encoding="utf-8")
        except OSError:
            return ""

    def save(self, text: str) -> None:
        """Keep ``text``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(text, encoding="utf-8")

    def clear(self) -> None:
        """Forget the draft."""
        self.path.unlink(missing_ok=True)


def read_history(path: Path) -> list[str]:
    """Entries of a prompt_toolkit history file, oldest first (multi-line entries joined)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries: list[str] = []
    current: list[str] = []
    for line in lines:
        if line.startswith("+"):
            current.append(line[1:])
        elif current:
            entries.append("\n".join(current))
            current = []
    if current:
        entries.append("\n".join(current))
    return entries


def append_history(path: Path, entry: str) -> None:
    """Add ``entry`` in prompt_toolkit's history format (so both front ends share it)."""
    from datetime import datetime

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"\n# {datetime.now()}\n")
        for line in entry.split("\n"):
            handle.write(f"+{line}\n")


__all__ = ["STATE_ENV", "Drafts", "append_history", "read_history", "state_root", "workspace_dir"]
