"""Workspace containment: every path a tool touches is checked here.

``validate_path`` checks, in this order (the order is the security property):
null byte → empty → lexical refusals (``~``, over-long paths, Unicode
look-alikes of ``.``/``/``) → resolve relative to the root (following symlinks)
→ containment via ``relative_to`` *before* any existence check → existence.
Nothing touches the filesystem before containment is decided.

Containment alone cannot stop a symlink swapped in between the check and the
open, so reads and writes open the resolved path component by component from
the root with ``O_NOFOLLOW`` (``openat`` style, through ``dir_fd``): a symlink
that appears anywhere on the path after the check makes the open fail instead
of following it. ``validate_for_write`` additionally refuses a symlink at the
leaf or at any ancestor, even one that points inside the workspace.
"""

from __future__ import annotations

import contextvars
import errno
import os
import stat
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from avo_tools.errors import WorkspaceNotBoundError, WorkspacePathError

PathLike = str | Path

MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_SEPARATORS = "./\\"


def _lexical_checks(text: str) -> None:
    """Refusals that need no filesystem access (run before resolving)."""
    if len(text) > MAX_PATH_CHARS:
        raise WorkspacePathError(
            f"path is too long ({len(text)} characters, limit {MAX_PATH_CHARS}): {text[:80]!r}...",
            path=text[:200],
        )
    if text.startswith("~"):
        raise WorkspacePathError(
            f"home-relative paths are not allowed: {text!r}; "
            "pass a path relative to the workspace root",
            path=text,
        )
    for part in text.split("/"):
        if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
            raise WorkspacePathError(
                f"path component is too long (limit {MAX_COMPONENT_BYTES} bytes): {part[:40]!r}...",
                path=text[:200],
            )
        normal = unicodedata.normalize("NFKC", part)
        if normal != part and any(normal.count(c) > part.count(c) for c in _SEPARATORS):
            raise WorkspacePathError(
                f"path component {part!r} is a Unicode look-alike of {normal!r}; "
                "use plain ASCII '.' and '/' in paths",
                path=text,
            )


def validate_path(root: PathLike, requested: PathLike, *, must_exist: bool = True) -> Path:
    """Return the resolved path of ``requested`` inside ``root`` or raise WorkspacePathError."""
    text = os.fspath(requested)
    if "\x00" in text:
        raise WorkspacePathError(f"path contains a null byte: {text!r}", path=text)
    if not text.strip():
        raise WorkspacePathError(
            "path is empty; pass a path relative to the workspace root", path=text
        )
    _lexical_checks(text)
    root_path = Path(os.path.realpath(root))
    raw = Path(text)
    joined = raw if raw.is_absolute() else root_path / raw
    candidate = Path(os.path.realpath(joined))
    try:
        candidate.relative_to(root_path)
    except ValueError:
        raise WorkspacePathError(
            f"path escapes workspace root {root_path}: {candidate}", path=text
        ) from None
    if must_exist and not os.path.lexists(candidate):
        raise WorkspacePathError(f"path does not exist in the workspace: {text}", path=text)
    return candidate


class Workspace:
    """A directory that tools may read and write inside, and nowhere else."""

    def __init__(self, root: PathLike, *, create: bool = False) -> None:
        path = Path(root)
        if create:
            path.mkdir(parents=True, exist_ok=True)
        try:
            resolved = path.resolve(strict=True)
        except FileNotFoundError:
            raise WorkspacePathError(
                f"workspace root {path} does not exist; pass create=True to make it",
                path=str(path),
            ) from None
        if not resolved.is_dir():
            raise WorkspacePathError(
                f"workspace root {resolved} is not a directory", path=str(resolved)
            )
        self._root = resolved

    @property
    def root(self) -> Path:
        """The resolved workspace root."""
        return self._root

    def __repr__(self) -> str:
        return f"Workspace({str(self._root)!r})"

    def validate_path(self, requested: PathLike, *, must_exist: bool = True) -> Path:
        """Containment-check ``requested`` (see :func:`validate_path`)."""
        return validate_path(self._root, requested, must_exist=must_exist)

    def validate_for_write(self, requested: PathLike) -> Path:
        """Like ``validate_path`` but also refuses any symlink on the path.

        The path is walked the way ``os.path.realpath`` resolves it (``..``
        drops the component before it) with every component ``lstat``-ed. Asking
        the kernel about the unnormalised spelling is not enough: for
        ``missing/../link/x`` it fails ``missing/..`` with ENOENT, so the link
        would go unseen while ``realpath`` (and the write) follows it.
        """
        candidate = self.validate_path(requested, must_exist=False)
        text = os.fspath(requested)
        raw = Path(text)
        # Relative paths are walked from the (resolved, link-free) root; absolute
        # ones from "/", so an absolute spelling of the root through a symlink is
        # refused too.
        parts = (raw if raw.is_absolute() else self._root / raw).parts
        current = Path(parts[0])
        for index, part in enumerate(parts[1:], start=1):
            if part == "..":
                # Every component walked so far is a real directory or missing, so
                # the lexical parent is the physical one.
                current = current.parent
                continue
            current = current / part
            if os.path.islink(current):
                if index == len(parts) - 1:
                    raise WorkspacePathError(
                        f"refusing to follow symlink at write target: {text}", path=text
                    )
                raise WorkspacePathError(f"refusing to follow symlink in path: {text}", path=text)
        if current != candidate:
            # Only possible if the tree changed between resolving and walking.
            raise WorkspacePathError(
                f"refusing to follow symlink in path (it changed during the check): {text}",
                path=text,
            )
        return candidate

    def relative(self, path: Path) -> str:
        """``path`` (already validated) relative to the root, POSIX style."""
        rel = path.relative_to(self._root).as_posix()
        return rel or "."

    # ---------------------------------------------------------------- open
    def _open_beneath(
        self, resolved: Path, flags: int, mode: int = 0o644, *, make_parents: bool = False
    ) -> int:
        """Open ``resolved`` walking from the root with O_NOFOLLOW at every step."""
        parts = resolved.relative_to(self._root).parts
        if not parts:
            raise WorkspacePathError("the workspace root itself is not a file", path=".")
        dir_fd = os.open(self._root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            for part in parts[:-1]:
                if make_parents:
                    with suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=dir_fd)
                next_fd = os.open(
                    part, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dir_fd
                )
                os.close(dir_fd)
                dir_fd = next_fd
            # O_NONBLOCK: opening a FIFO planted in the workspace must not hang the
            # runtime; anything but a regular file is refused right after the open.
            fd = os.open(
                parts[-1], flags | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK, mode, dir_fd=dir_fd
            )
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                raise WorkspacePathError(
                    f"not a regular file: {self.relative(resolved)}", path=str(resolved)
                )
            if flags & os.O_WRONLY and info.st_nlink > 1:
                os.close(fd)
                raise WorkspacePathError(
                    f"refusing to write through a hard link: {self.relative(resolved)} "
                    f"has {info.st_nlink} links",
                    path=str(resolved),
                )
            if _O_NONBLOCK:
                os.set_blocking(fd, True)
            return fd
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
                raise WorkspacePathError(
                    f"not a regular file: {self.relative(resolved)}", path=str(resolved)
                ) from None
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise WorkspacePathError(
                    f"refusing to follow symlink in path (it changed after the check): "
                    f"{self.relative(resolved)}",
                    path=str(resolved),
                ) from None
            if exc.errno == errno.ENOENT:
                raise WorkspacePathError(
                    f"path does not exist in the workspace: {self.relative(resolved)}",
                    path=str(resolved),
                ) from None
            raise
        finally:
            os.close(dir_fd)

    def read_bytes(
        self, requested: PathLike, *, limit: int | None = None
    ) -> tuple[Path, bytes, int]:
        """Read a regular file: ``(resolved path, data[:limit], full size)``."""
        resolved = self.validate_path(requested, must_exist=True)
        fd = self._open_beneath(resolved, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise WorkspacePathError(
                    f"not a regular file: {self.relative(resolved)}", path=str(resolved)
                )
            data = handle.read() if limit is None else handle.read(limit)
        return resolved, data, info.st_size

    def write_bytes(self, requested: PathLike, data: bytes) -> Path:
        """Write ``data`` (creating parents) without ever following a symlink."""
        resolved = self.validate_for_write(requested)
        # No O_TRUNC: the target is truncated only after it proved to be a
        # regular, singly-linked file.
        fd = self._open_beneath(resolved, os.O_WRONLY | os.O_CREAT, 0o644, make_parents=True)
        os.ftruncate(fd, 0)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return resolved

    def iter_files(self, start: Path) -> Iterator[Path]:
        """Regular files under ``start`` (validated), never following symlinks.

        The walk holds a descriptor of each directory it lists (``os.fwalk``) and
        enters a subdirectory only if what it opens is the directory it listed,
        so a directory swapped for a symlink mid-walk is skipped instead of
        leading the walk (and the names it reports) out of the workspace.
        """
        if _is_regular(start):
            yield start
            return
        for dirpath, dirnames, filenames, dir_fd in os.fwalk(start, follow_symlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    yield Path(dirpath) / name


def _is_regular(path: Path) -> bool:
    """A regular file, not a symlink/FIFO/socket/device (lstat: links never followed)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


_SKIP_DIRS = frozenset(
    {
        ".git",
        "__pycache__",
        ".venv",
        "node_modules",
        ".mypy_cache",
        ".nox",
        ".tox",
        ".pytest_cache",
        ".ruff_cache",
    }
)

_current: contextvars.ContextVar[tuple[Workspace, ...]] = contextvars.ContextVar(
    "avo_tools_workspace", default=()
)


@contextmanager
def bind_workspace(root: Workspace | PathLike, *, create: bool = False) -> Iterator[Workspace]:
    """Bind a workspace for the workspace tools invoked inside this block."""
    workspace = root if isinstance(root, Workspace) else Workspace(root, create=create)
    token = _current.set((*_current.get(), workspace))
    try:
        yield workspace
    finally:
        _current.reset(token)


def has_workspace() -> bool:
    """True inside ``bind_workspace(...)``."""
    return bool(_current.get())


def current_workspace(tool_name: str = "tool") -> Workspace:
    """The innermost bound workspace, or WorkspaceNotBoundError."""
    stack = _current.get()
    if not stack:
        raise WorkspaceNotBoundError(
            f"{tool_name} invoked without an active workspace; "
            "wrap the run in avo_tools.bind_workspace(...)"
        )
    return stack[-1]


__all__ = [
    "MAX_PATH_CHARS",
    "PathLike",
    "Workspace",
    "bind_workspace",
    "current_workspace",
    "has_workspace",
    "validate_path",
]
