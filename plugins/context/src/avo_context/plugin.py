"""Entry points (group ``avo.bundles``): ``compaction`` and ``instructions``; cheap to import."""

from __future__ import annotations

from typing import Any

from avo.plugins import BundleSpec, provides
from avo_context.settings import CompactionSettings, InstructionsSettings


def _compaction(settings: dict[str, Any]) -> Any:
    from avo_context.bundles import CompactionBundle

    return CompactionBundle(settings)


def _instructions(settings: dict[str, Any]) -> Any:
    from avo_context.bundles import InstructionsBundle

    return InstructionsBundle(settings)


compaction = provides(
    BundleSpec(
        name="compaction",
        factory=_compaction,
        description="Keeps requests inside the context window: elide old tool output, "
        "summarise old turns, recall elided output ([context])",
        settings_model=CompactionSettings,
    )
)
instructions = provides(
    BundleSpec(
        name="instructions",
        factory=_instructions,
        description="AGENTS.md of the workspace and its parents as instructions ([instructions])",
        settings_model=InstructionsSettings,
    )
)

__all__ = ["compaction", "instructions"]
