"""avo-temporal: avo runs as Temporal workflows, driven by the kernel's own state machine.

``avo worker --engine temporal`` serves runs; ``avo run --engine temporal``
submits one and follows it in the event store. See docs/temporal.md.
"""

from __future__ import annotations

from avo_temporal.engine import NAME, TemporalEngine
from avo_temporal.settings import TemporalSettings, load_settings

__all__ = ["NAME", "TemporalEngine", "TemporalSettings", "load_settings"]
