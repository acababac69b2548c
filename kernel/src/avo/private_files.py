"""Files and directories avo creates are owner-only.

Event stores, ledgers, job checkpoints, conversations and the audit log hold
prompts, tool outputs and (redacted) errors: a file avo creates gets mode
``0600`` and a directory it creates ``0700`` (before the umask, which can only
take permissions away). A file or directory that already exists keeps its
mode: it is the user's.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dirs(directory: str | Path) -> None:
    """Create ``directory`` and any missing parents, each owner-only (``0700``)."""
    missing: list[Path] = []
    current = Path(directory)
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=DIR_MODE)
        except FileExistsError:  # created meanwhile by someone else: theirs
            continue


def create_private_file(path: str | Path) -> bool:
    """Create ``path`` empty and owner-only (``0600``) unless it exists; True if created."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def open_private_append(path: str | Path) -> int:
    """Open ``path`` for appending (a file descriptor), creating it owner-only."""
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)


__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "create_private_file",
    "make_private_dirs",
    "open_private_append",
]
