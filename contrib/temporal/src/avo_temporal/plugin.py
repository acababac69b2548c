"""The ``temporal`` entry point of the ``avo.engines`` group."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from avo.plugins import EngineSpec, provides
from avo_temporal.settings import TemporalSettings


def _make(settings: Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> Any:
    from avo_temporal.engine import TemporalEngine

    return TemporalEngine(settings, environ=environ)


plugin = provides(
    EngineSpec(
        name="temporal",
        factory=_make,
        description="Drive runs as Temporal workflows on avo worker processes "
        "(model and tool calls as activities, exactly-once tool effects).",
        settings_model=TemporalSettings,
    )
)

__all__ = ["plugin"]
