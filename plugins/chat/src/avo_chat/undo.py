"""The undo journal: what each turn changed in the workspace, recorded before each write.

When a tool call starts (its TOOL_STARTED event is durable and the tool has
not acted yet) the journal keeps, once per file and turn, the file as it was:

- tools that modify (``write_file``, ``edit_file``, ``batch_replace``, any
  tool whose path arguments are declared) — the files their path arguments name;
- tools that execute (``run_shell`` and tools declaring a command argument) —
  a listing of the workspace (size and modification time of each file), and
  in a git repository the commit ``git stash create`` makes of the working
  tree, so files the command changes can be restored from it and files it
  creates can be removed.

``/undo`` restores the files of the session's last turn and reports what it
could not restore (a file changed since the turn ended is left alone unless
confirmed). Journals live in the chat's state directory, one JSON file per run.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 5_000_000
MAX_SCAN_FILES = 20_000
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".nox", ".tox"}


def values_at(arguments: Any, pointer: str) -> list[str]:
    """String values at ``pointer`` (``path``, ``paths[]``, ``patches[].path``)."""
    nodes: list[Any] = [arguments]
    for part in pointer.split("."):
        many = part.endswith("[]")
        key = part[:-2] if many else part
        found: list[Any] = []
        for node in nodes:
            value = node.get(key) if isinstance(node, dict) else None
            if many and isinstance(value, list):
                found.extend(value)
            elif value is not None:
                found.append(value)
        nodes = found
    return [value for value in nodes if isinstance(value, str) and value]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes()) if path.is_file() else None
    except OSError:
        return None


def scan(root: Path) -> dict[str, tuple[int, int]] | None:
    """``{relative path: (size, mtime_ns)}`` of the workspace's files (None: too many)."""
    found: dict[str, tuple[int, int]] = {}
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                stat = entry.stat(follow_symlinks=False)
                found[Path(entry.path).relative_to(root).as_posix()] = (
                    stat.st_size,
                    stat.st_mtime_ns,
                )
                if len(found) > MAX_SCAN_FILES:
                    return None
    return found


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_snapshot(root: Path) -> str | None:
    """A commit holding the working tree's tracked files as they are now (None: not a repo)."""
    if _git(root, "rev-parse", "--is-inside-work-tree") != "true":
        return None
    return _git(root, "stash", "create") or _git(root, "rev-parse", "HEAD")


@dataclass
class Restored:
    """What ``/undo`` did."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class UndoJournal:
    """Per-run records of the files a turn touched, as they were before it touched them."""

    def __init__(self, directory: Path, workspace: Path) -> None:
        self.directory = directory
        self.workspace = workspace.resolve()
        self._scans: dict[str, tuple[dict[str, tuple[int, int]] | None, str | None]] = {}

    def _file(self, run_id: str) -> Path:
        return self.directory / f"{run_id}.json"

    def load(self, run_id: str) -> dict[str, Any] | None:
        """The journal of ``run_id``, or None when this chat recorded nothing for it."""
        try:
            data = json.loads(self._file(run_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _save(self, run_id: str, data: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self._file(run_id)
        temporary = target.with_suffix(".tmp")
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, target)

    def _journal(self, run_id: str) -> dict[str, Any]:
        return self.load(run_id) or {"run_id": run_id, "files": {}}

    def _relative(self, path: str) -> str | None:
        target = (self.workspace / path).resolve()
        if target != self.workspace and self.workspace not in target.parents:
            return None
        return target.relative_to(self.workspace).as_posix()

    # -- recording (kernel thread, from the chat's event observer) -----------------

    def before(
        self, run_id: str, call_id: str, name: str, arguments: Any, kinds: dict[str, str], risk: str
    ) -> None:
        """A call is about to run: keep the files it may change, as they are."""
        if risk == "inspect":
            return
        paths = [
            path
            for pointer, kind in kinds.items()
            if kind == "path"
            for path in values_at(arguments, pointer)
        ]
        commands = [p for p, kind in kinds.items() if kind == "command"]
        data = self._journal(run_id)
        files: dict[str, Any] = data["files"]
        changed = False
        for path in paths:
            relative = self._relative(path)
            if relative is None or relative in files:
                continue
            files[relative] = self._keep(self.workspace / relative, name)
            changed = True
        if commands or risk == "execute":
            self._scans[call_id] = (scan(self.workspace), git_snapshot(self.workspace))
            data.setdefault("shell", []).append(name)
            changed = True
        if changed:
            self._save(run_id, data)

    def _keep(self, target: Path, via: str) -> dict[str, Any]:
        if not target.exists():
            return {"existed": False, "via": via}
        try:
            if not target.is_file() or target.stat().st_size > MAX_FILE_BYTES:
                return {"existed": True, "via": via, "lost": "too large or not a file; not kept"}
            data = target.read_bytes()
        except OSError as exc:
            return {"existed": True, "via": via, "lost": f"could not be read ({exc.strerror})"}
        return {"existed": True, "via": via, "content": base64.b64encode(data).decode("ascii")}

    def after(self, run_id: str, call_id: str, name: str) -> None:
        """A call ended: note how its files look now, and what a command changed."""
        data = self.load(run_id)
        if data is None:
            return
        files: dict[str, Any] = data["files"]
        scanned = self._scans.pop(call_id, None)
        if scanned is not None:
            before, commit = scanned
            now = scan(self.workspace)
            if before is None or now is None:
                data.setdefault("untracked", []).append(f"{name}: too many files to follow")
            else:
                for relative in sorted(set(before) | set(now)):
                    if before.get(relative) == now.get(relative) or relative in files:
                        continue
                    if relative not in before:
                        files[relative] = {"existed": False, "via": name}
                    elif (
                        commit is not None
                        and _git(self.workspace, "cat-file", "-e", f"{commit}:{relative}")
                        is not None
                    ):
                        files[relative] = {"existed": True, "via": name, "git": commit}
                    else:
                        files[relative] = {
                            "existed": True,
                            "via": name,
                            "lost": "changed by a command and not tracked by git; not kept",
                        }
        for relative, entry in files.items():
            entry["after"] = _file_digest(self.workspace / relative)
        self._save(run_id, data)

    # -- restoring -----------------------------------------------------------------

    def conflicts(self, run_id: str) -> list[str]:
        """Files of the turn changed since it ended (restoring would lose those changes)."""
        data = self.load(run_id) or {"files": {}}
        return [
            relative
            for relative, entry in sorted(data["files"].items())
            if "after" in entry and _file_digest(self.workspace / relative) != entry["after"]
        ]

    def restore(self, run_id: str, *, force: bool = False) -> Restored:
        """Put the turn's files back as they were before it; its journal is then removed."""
        data = self.load(run_id) or {"files": {}}
        report = Restored()
        conflicts = set(self.conflicts(run_id))
        for relative, entry in sorted(data["files"].items()):
            target = self.workspace / relative
            if relative in conflicts and not force:
                report.conflicts.append(relative)
                continue
            if "lost" in entry:
                report.failed[relative] = str(entry["lost"])
                continue
            try:
                if not entry.get("existed"):
                    if target.exists():
                        target.unlink()
                        report.removed.append(relative)
                    continue
                if "git" in entry:
                    content = subprocess.run(
                        ["git", "show", f"{entry['git']}:{relative}"],
                        cwd=self.workspace,
                        capture_output=True,
                        check=True,
                        timeout=20,
                    ).stdout
                else:
                    content = base64.b64decode(entry["content"])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
                report.restored.append(relative)
            except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
                report.failed[relative] = f"{type(exc).__name__}: {exc}"
        if not report.conflicts:
            with contextlib.suppress(OSError):
                self._file(run_id).unlink()
        return report

    def describe(self, run_id: str) -> list[str]:
        """One line per file the turn touched (for the confirmation)."""
        data = self.load(run_id) or {"files": {}}
        lines = []
        for relative, entry in sorted(data["files"].items()):
            what = "created" if not entry.get("existed") else "changed"
            lines.append(f"{relative} ({what} by {entry.get('via', '?')})")
        return lines


__all__ = ["Restored", "UndoJournal", "git_snapshot", "scan", "values_at"]
