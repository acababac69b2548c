"""OpenTelemetry tracing front door; the implementation is a plugin.

The kernel never imports ``opentelemetry``. These functions find the tracing
backend through the ``avo.otel`` entry-point group (the ``avo-otel`` contrib
package registers ``backend = "avo_otel.tracer"``) and delegate to it:

* :func:`is_enabled` — the ``AVO_OTEL_ENABLED`` gate (``1``/``true``/``yes``/``on``).
* :func:`configure_tracer` — raises :class:`OtelDisabledError` when the gate is
  off, or when no backend is installed (with the message naming the extra).
* :func:`span_for_turn`, :func:`record_tool_call`, :func:`record_usage` — safe
  to call unconditionally: with tracing off they do nothing.

For whole runs, compose the runtime with the ``avo_otel.OtelPlugin`` pluggy
plugin instead: it turns the event stream into a span per model turn and per
tool call without any code in the loop.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Mapping
from decimal import Decimal
from types import ModuleType
from typing import Any

from avo.exceptions import AvoError

OTEL_ENABLED_ENV = "AVO_OTEL_ENABLED"
OTEL_SERVICE_NAME_ENV = "AVO_OTEL_SERVICE_NAME"
BACKEND_GROUP = "avo.otel"
MISSING_EXTRA_MESSAGE = (
    "AVO_OTEL_ENABLED=1 requires the [otel] extra. Install with `pip install avo[otel]`."
)
DISABLED_MESSAGE = "OpenTelemetry tracing is disabled; set AVO_OTEL_ENABLED=1 to enable it."
_TRUTHY = frozenset({"1", "true", "yes", "on"})


class OtelDisabledError(AvoError):
    """Tracing was requested but is switched off or not installed."""


def is_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``AVO_OTEL_ENABLED`` is truthy in ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    return env.get(OTEL_ENABLED_ENV, "").strip().lower() in _TRUTHY


def _backend() -> ModuleType | None:
    """The installed tracing backend module, or None (looked up once per process)."""
    return _load_backend()


@functools.lru_cache(maxsize=1)
def _load_backend() -> ModuleType | None:
    from importlib.metadata import entry_points

    for entry in entry_points(group=BACKEND_GROUP):
        try:
            module = entry.load()
        except ImportError:
            continue  # the backend is installed but OpenTelemetry itself is not
        if isinstance(module, ModuleType):
            return module
    return None


def configure_tracer(
    *,
    service_name: str | None = None,
    environ: Mapping[str, str] | None = None,
    exporter: Any = None,
) -> Any:
    """Configure and return an OpenTelemetry tracer named ``avo``.

    Service name: ``service_name``, else ``AVO_OTEL_SERVICE_NAME``, else
    ``"avo"``. ``exporter`` overrides the OTLP exporter (tests pass the SDK's
    ``InMemorySpanExporter``).
    """
    if not is_enabled(environ):
        raise OtelDisabledError(DISABLED_MESSAGE)
    backend = _backend()
    if backend is None:
        raise OtelDisabledError(MISSING_EXTRA_MESSAGE)
    return backend.configure_tracer(service_name=service_name, environ=environ, exporter=exporter)


@contextlib.contextmanager
def span_for_turn(
    run_id: str,
    provider: str | None = None,
    model: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Iterator[Any]:
    """A span named ``avo.turn`` around one model turn (yields None when tracing is off)."""
    backend = _backend() if is_enabled(environ) else None
    if backend is None:
        yield None
        return
    with backend.span_for_turn(run_id, provider=provider, model=model) as span:
        yield span


def record_tool_call(span: Any, name: str, *, call_id: str | None = None) -> None:
    """Attach a tool call (``gen_ai.tool.name`` / ``gen_ai.tool.call.id``) to ``span``."""
    if span is None:
        return
    backend = _backend()
    if backend is not None:
        backend.record_tool_call(span, name, call_id=call_id)


def record_usage(
    span: Any,
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cost_usd: Decimal | float | None = None,
) -> None:
    """Attach token usage (``gen_ai.usage.*``) and cost to ``span``."""
    if span is None:
        return
    backend = _backend()
    if backend is not None:
        backend.record_usage(
            span, input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd
        )


__all__ = [
    "BACKEND_GROUP",
    "DISABLED_MESSAGE",
    "MISSING_EXTRA_MESSAGE",
    "OTEL_ENABLED_ENV",
    "OTEL_SERVICE_NAME_ENV",
    "OtelDisabledError",
    "configure_tracer",
    "is_enabled",
    "record_tool_call",
    "record_usage",
    "span_for_turn",
]
