"""``AGENTS.md``: project instructions for agents, found in the workspace and its parents.

The instructions bundle reads every ``AGENTS.md`` from the run's workspace up
through its parent directories. The nearest file wins: files are read nearest
first while they fit ``max_bytes``, and shown to the model outermost first so
the nearest comes last (and overrides where they disagree). A file that does
not fit is cut (the nearest one) or left out (a parent), and the message says
so. Unreadable files are reported as problems of the bundle, not errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from avo_context.settings import InstructionsSettings

HEADER = (
    "Project instructions from AGENTS.md files (the one nearest to the workspace is last "
    "and wins where they disagree):"
)


@dataclass
class FoundInstructions:
    """What was read: the text to show, the files used, and any problems."""

    text: str = ""
    files: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)


def _candidates(start: Path, settings: InstructionsSettings) -> list[Path]:
    directories = [start, *start.parents] if settings.parents else [start]
    found: list[Path] = []
    for directory in directories:
        for name in settings.files:
            path = directory / name
            if path.is_file():
                found.append(path)
                break
    return found  # nearest first


def read_instructions(workspace: Path, settings: InstructionsSettings) -> FoundInstructions:
    """The AGENTS.md text for ``workspace`` (nearest first within ``max_bytes``)."""
    start = Path(settings.root) if settings.root else Path(".")
    if not start.is_absolute():
        start = workspace / start
    start = start.resolve()
    result = FoundInstructions()
    budget = settings.max_bytes
    sections: list[str] = []
    for path in _candidates(start, settings):
        try:
            data = path.read_bytes()
        except OSError as exc:
            result.problems[str(path)] = f"cannot read it: {exc.strerror or exc}"
            continue
        if budget <= 0:
            result.problems[str(path)] = f"left out: over the {settings.max_bytes}-byte limit"
            continue
        text = data[:budget].decode("utf-8", errors="replace").strip()
        note = ""
        if len(data) > budget:
            note = f"\n[... cut at the {settings.max_bytes}-byte limit for instructions]"
        budget -= len(data)
        sections.append(f"## {path}\n\n{text}{note}")
        result.files.append(str(path))
    if sections:
        result.text = HEADER + "\n\n" + "\n\n".join(reversed(sections))
    return result


__all__ = ["FoundInstructions", "read_instructions"]
