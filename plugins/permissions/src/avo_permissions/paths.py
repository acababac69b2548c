"""Path globs and the built-in sensitive-path list.

A path argument is matched after resolving it against the workspace and
following symlinks, so ``docs/notes -> ../.env`` is the ``.env`` it points to.
Globs use ``/`` separators and gitignore's conventions:

- ``*`` and ``?`` stay within one path segment, ``**`` spans any number of
  segments (zero included: ``src/**`` matches ``src`` itself);
- a pattern without a ``/`` (``*.pem``, ``.env``) matches a name at any depth;
- a pattern ending in ``/`` (``build/``) matches that directory and everything
  under it;
- other patterns are relative to the workspace root and never match a path
  outside it; a pattern starting with ``/`` or ``~/`` is absolute.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache, lru_cache
from pathlib import Path

SENSITIVE_PATTERNS: tuple[str, ...] = (
    # environment files (templates are exempt, see SENSITIVE_EXEMPT)
    ".env",
    ".env.*",
    # git internals: hooks execute, config may hold credentials
    "**/.git/**",
    # SSH
    "**/.ssh/**",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    # cloud and tool credentials
    "**/.aws/**",
    "**/.azure/**",
    "**/.kube/**",
    "**/.gnupg/**",
    "~/.config/gcloud/**",
    "~/.config/gh/hosts.yml",
    "~/.docker/config.json",
    ".git-credentials",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    # key material
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.ppk",
)
"""The built-in denylist, applied in every permission mode except ``bypass_permissions``."""

SENSITIVE_EXEMPT: frozenset[str] = frozenset(
    {".env.example", ".env.sample", ".env.template", ".env.dist"}
)
"""File names that match ``.env.*`` but are, by convention, templates without secrets."""


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> tuple[bool, tuple[str, ...]]:
    """``(absolute, segments)`` of a glob (``~`` expanded, gitignore rules applied)."""
    text = pattern.strip()
    if text.startswith("~"):
        text = os.path.expanduser(text)
    absolute = text.startswith("/")
    if text.endswith("/"):
        text = text.rstrip("/") + "/**"
    body = text.lstrip("/")
    if not absolute and "/" not in body:
        body = f"**/{body}"
    segments = tuple(part for part in body.split("/") if part not in ("", "."))
    return absolute, segments


def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    @cache
    def at(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(parts)
        if pattern[i] == "**":
            return at(i + 1, j) or (j < len(parts) and at(i, j + 1))
        return j < len(parts) and fnmatchcase(parts[j], pattern[i]) and at(i + 1, j + 1)

    return at(0, 0)


@dataclass(frozen=True)
class ResolvedPath:
    """One path argument: as written, and as it resolves (symlinks followed)."""

    raw: str
    lexical: str  # absolute, normalised, symlinks not followed
    real: str  # absolute, symlinks followed (as far as the path exists)
    relative: str | None  # ``real`` relative to the workspace; None when outside it
    lexical_relative: str | None

    def candidates(self, *, resolved_only: bool) -> list[tuple[str, str | None]]:
        """``(absolute, workspace-relative)`` forms to match a glob against."""
        forms = [(self.real, self.relative)]
        if not resolved_only and (self.lexical, self.lexical_relative) not in forms:
            forms.append((self.lexical, self.lexical_relative))
        return forms


def _parts(path: str) -> tuple[str, ...]:
    return tuple(part for part in path.split("/") if part not in ("", "."))


def glob_matches(pattern: str, path: ResolvedPath, *, strict: bool = False) -> bool:
    """True when ``pattern`` matches ``path``.

    Lenient (deny and ask rules, the sensitive list): the path as written or as
    resolved may match, and a pattern starting with ``**`` also matches outside
    the workspace. ``strict`` (allow rules): only the resolved path counts, and
    a relative pattern matches only inside the workspace.
    """
    absolute, segments = _compile(pattern)
    anywhere = not strict and not absolute and segments[:1] == ("**",)
    for full, relative in path.candidates(resolved_only=strict):
        if (absolute or anywhere) and _match(segments, _parts(full)):
            return True
        if not absolute and relative is not None and _match(segments, _parts(relative)):
            return True
    return False


def sensitive_match(path: ResolvedPath, extra: tuple[str, ...] = ()) -> str | None:
    """The sensitive pattern ``path`` matches (as written or resolved), or None."""
    names = {os.path.basename(path.real), os.path.basename(path.lexical)}
    for pattern in (*SENSITIVE_PATTERNS, *extra):
        if glob_matches(pattern, path):
            if pattern == ".env.*" and names <= SENSITIVE_EXEMPT:
                continue
            return pattern
    return None


class PathResolver:
    """Resolves path arguments against a workspace root."""

    def __init__(self, workspace: str | Path) -> None:
        self.workspace = os.path.abspath(os.path.expanduser(str(workspace)))
        self.real_workspace = os.path.realpath(self.workspace)

    @staticmethod
    def _relative(path: str, root: str) -> str | None:
        if path == root:
            return ""
        prefix = root.rstrip("/") + "/"
        return path[len(prefix) :] if path.startswith(prefix) else None

    def resolve(self, raw: str) -> ResolvedPath:
        """Resolve ``raw`` (relative to the workspace, ``~`` expanded)."""
        text = raw.replace("\x00", "")
        if text.startswith("~"):
            text = os.path.expanduser(text)
        joined = os.path.join(self.workspace, text)
        lexical = os.path.normpath(joined)
        real = os.path.realpath(joined)
        relative = self._relative(real, self.real_workspace)
        if relative is None:  # a workspace reached through a symlinked parent
            relative = self._relative(real, self.workspace)
        return ResolvedPath(
            raw=raw,
            lexical=lexical,
            real=real,
            relative=relative,
            lexical_relative=self._relative(lexical, self.workspace),
        )


__all__ = [
    "SENSITIVE_EXEMPT",
    "SENSITIVE_PATTERNS",
    "PathResolver",
    "ResolvedPath",
    "glob_matches",
    "sensitive_match",
]
