"""avo-context: keep requests inside the context window, and bring AGENTS.md to the model.

- :class:`CompactionBundle` (``[context] policy = "compaction"``, the default):
  the compaction policy and the ``recall`` tool;
- :class:`InstructionsBundle` (``[instructions]``): the workspace's AGENTS.md.
"""

from __future__ import annotations

from avo_context.agents_md import read_instructions
from avo_context.bundles import CompactionBundle, InstructionsBundle
from avo_context.compaction import CompactionPolicy
from avo_context.recall import RecallTool
from avo_context.settings import CompactionSettings, InstructionsSettings

__version__ = "1.0.0"

__all__ = [
    "CompactionBundle",
    "CompactionPolicy",
    "CompactionSettings",
    "InstructionsBundle",
    "InstructionsSettings",
    "RecallTool",
    "read_instructions",
]
