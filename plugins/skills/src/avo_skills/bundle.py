"""The ``skills`` bundle: the model sees the list of skills and loads one when it needs it.

Enabled by ``[skills]`` in avo.toml. For each run it lists the skills under
``root`` (default ``.avo/skills`` in the run's workspace) as instructions —
one line each, name and description — and adds the ``load_skill`` tool that
returns a skill's full text, so a skill costs context only once it is used.
A skill file that cannot be read is reported as a problem of the bundle.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from avo.bundles import BundleParts, BundleRun
from avo.exceptions import AvoError, ToolValidationError
from avo.models import ToolMetadata
from avo.plugins import BundleSpec, provides
from avo.risk import ToolRisk
from avo_skills.registry import DEFAULT_ROOT, SkillRegistry

HEADER = (
    "Skills available in this workspace (instructions for particular tasks). Before "
    "doing a task a skill covers, load its full text with the load_skill tool and follow it:"
)


class SkillsSettings(BaseModel):
    """``[skills]``: where the skills are and how many are listed."""

    model_config = ConfigDict(extra="forbid")

    root: str = str(DEFAULT_ROOT)
    """The skills directory, relative to the run's workspace (or absolute)."""
    max_listed: int = Field(default=100, ge=1)
    """The most skills listed to the model (the rest can still be loaded by name)."""


class LoadSkillArguments(BaseModel):
    """Which skill to load."""

    name: str = Field(min_length=1, description="the skill's name, as listed")


class LoadSkillTool:
    """``load_skill(name)``: the full text of one skill."""

    def __init__(self, registry: SkillRegistry) -> None:
        self.registry = registry
        self._metadata = ToolMetadata(
            name="load_skill",
            description="Load the full instructions of a skill listed in the system message.",
            input_schema=LoadSkillArguments.model_json_schema(),
            risk=ToolRisk.INSPECT,
        )

    @property
    def metadata(self) -> ToolMetadata:
        """What the model is told about ``load_skill``."""
        return self._metadata

    async def invoke(self, arguments: Mapping[str, Any]) -> str:
        """The skill's body (a SkillError naming the available skills if it is unknown)."""
        try:
            name = LoadSkillArguments.model_validate(dict(arguments)).name
        except ValidationError as exc:
            raise ToolValidationError(
                f"Invalid arguments for tool 'load_skill': {exc}", tool_name="load_skill"
            ) from exc
        skill = self.registry.get(name)
        return f"Skill {skill.name}:\n\n{skill.body}"


class SkillsBundle:
    """Per run: the skills list as instructions, and ``load_skill``."""

    name = "skills"

    def __init__(self, settings: SkillsSettings | Mapping[str, Any] | None = None) -> None:
        if not isinstance(settings, SkillsSettings):
            settings = SkillsSettings.model_validate(dict(settings or {}))
        self.settings = settings

    async def setup(self, run: BundleRun) -> BundleParts:
        """Read the skills now, so skills added later apply from the next run."""
        return self.parts(run.workspace)

    def parts(self, workspace: Path) -> BundleParts:
        """The instructions and tool for the skills under ``workspace``."""
        root = Path(self.settings.root).expanduser()
        if not root.is_absolute():
            root = workspace / root
        registry = SkillRegistry(root)
        lines: list[str] = []
        problems: dict[str, str] = {}
        for name in registry.names():
            try:
                skill = registry.get(name)
            except (AvoError, OSError, UnicodeDecodeError) as exc:
                problems[name] = str(exc)
                continue
            if len(lines) < self.settings.max_listed:
                description = skill.description or "(no description)"
                lines.append(f"- {skill.name}: {description}")
        if not lines:
            return BundleParts(problems=problems)
        return BundleParts(
            instructions=[HEADER + "\n" + "\n".join(lines)],
            tools=[LoadSkillTool(registry)],
            problems=problems,
        )

    async def close(self) -> None:
        """Nothing to release."""


def _make(settings: dict[str, Any]) -> SkillsBundle:
    return SkillsBundle(settings)


skills_bundle = provides(
    BundleSpec(
        name="skills",
        factory=_make,
        description="Lists the workspace's skills to the model; load_skill loads one ([skills])",
        settings_model=SkillsSettings,
    )
)
"""The ``avo.bundles`` entry point (imported only when the bundle is used)."""

__all__ = ["LoadSkillTool", "SkillsBundle", "SkillsSettings", "skills_bundle"]
