"""The OpenTelemetry backend behind :mod:`avo.observability`.

``configure_tracer`` builds a :class:`~opentelemetry.sdk.trace.TracerProvider`
with ``service.name`` (argument, ``AVO_OTEL_SERVICE_NAME`` or ``"avo"``) and
``service.version``, exporting through OTLP gRPC with a batch processor — or,
when the OTLP exporter is not installed, into an in-memory exporter. Tests pass
their own exporter. The provider is kept here (not installed globally, which
OpenTelemetry allows only once per process) and used by the span helpers.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from avo.observability import OTEL_SERVICE_NAME_ENV, is_enabled
from avo_otel import attributes as attrs

TRACER_NAME = "avo"
_state: dict[str, Any] = {"provider": None, "exporter": None}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("avo-kernel")
    except PackageNotFoundError:
        return "0"


def build_provider(
    *,
    service_name: str | None = None,
    environ: Mapping[str, str] | None = None,
    exporter: SpanExporter | None = None,
) -> tuple[TracerProvider, SpanExporter]:
    """A tracer provider and the exporter it writes to (no gate, no global state)."""
    env = os.environ if environ is None else environ
    name = service_name or env.get(OTEL_SERVICE_NAME_ENV) or "avo"
    resource = Resource.create({"service.name": name, "service.version": _version()})
    provider = TracerProvider(resource=resource)
    if exporter is not None:
        # An explicit exporter (tests, in-memory) sees each span as soon as it ends.
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return provider, exporter
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter,
        )
    except ImportError:
        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        return provider, memory
    otlp = OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(otlp))
    return provider, otlp


def configure_tracer(
    *,
    service_name: str | None = None,
    environ: Mapping[str, str] | None = None,
    exporter: SpanExporter | None = None,
) -> trace.Tracer:
    """Configure the process's avo tracer and return it (the gate is checked by the kernel)."""
    provider, used = build_provider(service_name=service_name, environ=environ, exporter=exporter)
    old = _state["provider"]
    if old is not None:
        old.shutdown()
    _state["provider"], _state["exporter"] = provider, used
    return provider.get_tracer(TRACER_NAME, _version())


def current_exporter() -> SpanExporter | None:
    """The exporter the last :func:`configure_tracer` call wired up."""
    exporter: SpanExporter | None = _state["exporter"]
    return exporter


def _tracer() -> trace.Tracer:
    provider = _state["provider"]
    if provider is not None:
        tracer: trace.Tracer = provider.get_tracer(TRACER_NAME)
        return tracer
    return trace.get_tracer(TRACER_NAME)


@contextlib.contextmanager
def span_for_turn(
    run_id: str, provider: str | None = None, model: str | None = None
) -> Iterator[trace.Span]:
    """An ``avo.turn`` span with the run id and GenAI system/model attributes."""
    attributes: dict[str, Any] = {attrs.RUN_ID: run_id, attrs.OPERATION: "chat"}
    if provider:
        attributes[attrs.SYSTEM] = provider
    if model:
        attributes[attrs.REQUEST_MODEL] = model
    with _tracer().start_as_current_span(attrs.TURN_SPAN, attributes=attributes) as span:
        yield span


def record_tool_call(span: trace.Span, name: str, *, call_id: str | None = None) -> None:
    """Attach the requested tool (``gen_ai.tool.name`` / ``gen_ai.tool.call.id``)."""
    span.set_attribute(attrs.TOOL_NAME, name)
    if call_id:
        span.set_attribute(attrs.TOOL_CALL_ID, call_id)


def record_usage(
    span: trace.Span,
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cost_usd: Decimal | float | None = None,
) -> None:
    """Attach token usage (``gen_ai.usage.*``) and the cost in USD (``avo.cost_usd``)."""
    if input_tokens is not None:
        span.set_attribute(attrs.INPUT_TOKENS, int(input_tokens))
    if output_tokens is not None:
        span.set_attribute(attrs.OUTPUT_TOKENS, int(output_tokens))
    if cost_usd is not None:
        span.set_attribute(attrs.COST_USD, float(cost_usd))


__all__ = [
    "TRACER_NAME",
    "build_provider",
    "configure_tracer",
    "current_exporter",
    "is_enabled",
    "record_tool_call",
    "record_usage",
    "span_for_turn",
]
