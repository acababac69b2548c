"""avo-otel: OpenTelemetry tracing for avo runs (GenAI semantic conventions).

* :class:`OtelPlugin` — register on a runtime's plugin manager; each run becomes
  one trace with a span per model turn and per tool call.
* :mod:`avo_otel.tracer` — the backend of ``avo.observability`` (entry point
  ``avo.otel: backend``): ``configure_tracer``, ``span_for_turn``,
  ``record_tool_call``, ``record_usage``.
"""

from __future__ import annotations

from avo_otel.plugin import OtelPlugin
from avo_otel.tracer import build_provider, configure_tracer, current_exporter

__version__ = "1.0.0"

__all__ = ["OtelPlugin", "build_provider", "configure_tracer", "current_exporter"]
