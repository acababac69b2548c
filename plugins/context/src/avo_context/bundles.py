"""The two bundles of avo-context: the compaction policy and AGENTS.md instructions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from avo.bundles import BundleParts, BundleRun
from avo_context.agents_md import read_instructions
from avo_context.compaction import CompactionPolicy
from avo_context.recall import RecallTool
from avo_context.settings import CompactionSettings, InstructionsSettings


class CompactionBundle:
    """Per run: a :class:`CompactionPolicy` (request shaper) and the ``recall`` tool."""

    name = "compaction"

    def __init__(self, settings: CompactionSettings | Mapping[str, Any] | None = None) -> None:
        if not isinstance(settings, CompactionSettings):
            settings = CompactionSettings.model_validate(dict(settings or {}))
        self.settings = settings

    async def setup(self, run: BundleRun) -> BundleParts:
        """A fresh policy for the run (its state comes from the run's checkpoints)."""
        tools = [RecallTool(run, max_chars=self.settings.recall_max_chars)]
        return BundleParts(
            tools=tools if self.settings.recall else [],
            shapers=[CompactionPolicy(self.settings)],
        )

    async def close(self) -> None:
        """Nothing to release."""


class InstructionsBundle:
    """Per run: the AGENTS.md files of the workspace, as instructions."""

    name = "instructions"

    def __init__(self, settings: InstructionsSettings | Mapping[str, Any] | None = None) -> None:
        if not isinstance(settings, InstructionsSettings):
            settings = InstructionsSettings.model_validate(dict(settings or {}))
        self.settings = settings

    async def setup(self, run: BundleRun) -> BundleParts:
        """Read the files now, so an edited AGENTS.md applies from the next run."""
        found = read_instructions(run.workspace, self.settings)
        return BundleParts(instructions=[found.text] if found.text else [], problems=found.problems)

    async def close(self) -> None:
        """Nothing to release."""


__all__ = ["CompactionBundle", "InstructionsBundle"]
