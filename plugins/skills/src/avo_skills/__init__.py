"""avo skills: named Markdown instructions under ``.avo/skills``."""

from __future__ import annotations

from avo.exceptions import SkillError
from avo_skills.registry import (
    DEFAULT_ROOT,
    Skill,
    SkillRegistry,
    load_skills,
    parse_skill,
    validate_name,
)

__all__ = [
    "DEFAULT_ROOT",
    "Skill",
    "SkillError",
    "SkillRegistry",
    "load_skills",
    "parse_skill",
    "validate_name",
]
