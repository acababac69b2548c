"""Skills: named Markdown instructions an agent can load on demand.

A skill lives under a skills root (``.avo/skills`` by default) either as a
directory ``<name>/SKILL.md`` (what ``avo init`` scaffolds) or as a single
file ``<name>.md``. Names match ``^[a-z0-9][a-z0-9_-]{0,63}$`` — which also
keeps every skill path inside the root. An optional front matter block
(``---`` / ``key: value`` lines / ``---``) carries ``name`` and ``description``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from avo.exceptions import SkillError

_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SKILL_FILE = "SKILL.md"
SUFFIX = ".md"
DEFAULT_ROOT = Path(".avo") / "skills"


def validate_name(name: str) -> str:
    """Return ``name`` or raise SkillError saying what a valid name looks like."""
    if not _NAME_PATTERN.match(name):
        raise SkillError(
            f"invalid skill name {name!r}: use 1-64 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit (e.g. 'repo-overview')"
        )
    return name


@dataclass(frozen=True)
class Skill:
    """One loaded skill."""

    name: str
    path: Path
    body: str
    description: str = ""
    metadata: dict[str, str] = field(default_factory=dict)


def parse_skill(text: str) -> tuple[dict[str, str], str]:
    """Split optional ``---`` front matter from the body."""
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---", 4)
    if end == -1:
        return {}, text
    meta: dict[str, str] = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            meta[key.strip()] = value.strip()
    body = text[end + 4 :].lstrip("\n")
    return meta, body


class SkillRegistry:
    """The skills under one root directory."""

    def __init__(self, root: Path) -> None:
        self._root = Path(root)

    @property
    def root(self) -> Path:
        """The skills directory."""
        return self._root

    def path_of(self, name: str) -> Path | None:
        """Where skill ``name`` lives (directory form first), or None."""
        validate_name(name)
        for candidate in (self._root / name / SKILL_FILE, self._root / f"{name}{SUFFIX}"):
            if candidate.is_file() and not candidate.is_symlink():
                return candidate
        return None

    def exists(self, name: str) -> bool:
        """True when skill ``name`` is installed."""
        return self.path_of(name) is not None

    def get(self, name: str) -> Skill:
        """Load skill ``name`` with its metadata."""
        path = self.path_of(name)
        if path is None:
            available = ", ".join(self.names()) or "none installed"
            raise SkillError(f"no skill named {name!r} in {self._root} (available: {available})")
        meta, body = parse_skill(path.read_text(encoding="utf-8"))
        return Skill(name, path, body, meta.get("description", ""), meta)

    def load(self, name: str) -> str:
        """The body of skill ``name``."""
        return self.get(name).body

    def names(self) -> list[str]:
        """Installed skill names, sorted."""
        if not self._root.is_dir():
            return []
        found: set[str] = set()
        for entry in self._root.iterdir():
            stem = entry.name[: -len(SUFFIX)] if entry.name.endswith(SUFFIX) else entry.name
            if _NAME_PATTERN.match(stem) and self.path_of(stem) is not None:
                found.add(stem)
        return sorted(found)

    def __iter__(self) -> Iterator[Skill]:
        return (self.get(name) for name in self.names())

    def install(self, source: Path, *, name: str | None = None, force: bool = False) -> Skill:
        """Copy a skill (a ``.md`` file or a directory holding SKILL.md) into the root."""
        source = Path(source)
        if not source.exists():
            raise SkillError(
                f"cannot install {source}: no such file or directory; give a skill's .md file "
                f"or a directory with {SKILL_FILE}"
            )
        if source.is_dir():
            skill_file = source / SKILL_FILE
            default_name = source.name
        else:
            skill_file = source
            default_name = source.name.removesuffix(SUFFIX).removesuffix(".MD")
        if not skill_file.is_file() or skill_file.is_symlink():
            raise SkillError(
                f"cannot install {source}: expected a .md file or a directory with {SKILL_FILE}"
            )
        text = skill_file.read_text(encoding="utf-8")
        meta, _ = parse_skill(text)
        target_name = validate_name(name or meta.get("name") or default_name.lower())
        if self.exists(target_name) and not force:
            raise SkillError(f"skill {target_name!r} is already installed; pass --force to replace")
        self.remove(target_name, missing_ok=True)
        target = self._root / target_name / SKILL_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return self.get(target_name)

    def remove(self, name: str, *, missing_ok: bool = False) -> bool:
        """Delete skill ``name``; False (or SkillError) when it is not installed."""
        path = self.path_of(name)
        if path is None:
            if missing_ok:
                return False
            raise SkillError(f"no skill named {name!r} in {self._root}")
        path.unlink()
        if path.name == SKILL_FILE:
            folder = path.parent
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        return True


def load_skills(root: Path) -> dict[str, str]:
    """Create ``root`` if needed and return ``{name: body}`` for every skill in it."""
    registry = SkillRegistry(Path(root))
    registry.root.mkdir(parents=True, exist_ok=True)
    return {skill.name: skill.body for skill in registry}


__all__ = [
    "DEFAULT_ROOT",
    "SKILL_FILE",
    "Skill",
    "SkillRegistry",
    "load_skills",
    "parse_skill",
    "validate_name",
]
