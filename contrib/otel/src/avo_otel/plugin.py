"""Trace whole runs from their event stream, with no code in the kernel loop.

Register :class:`OtelPlugin` on the runtime's plugin manager::

    manager = PluginManager()
    manager.register(OtelPlugin(tracer), "otel")
    runtime = AgentRuntime(provider=..., plugins=manager)

Each run becomes one trace: a root ``avo.run`` span (RUN_CREATED or
RUN_RESUMED → the terminal event), a child ``avo.turn`` span per model turn
(MODEL_RESPONDED, timed by its ``duration_ms``; MODEL_FAILED marks an error)
and a child ``execute_tool {name}`` span per tool call (TOOL_STARTED →
TOOL_COMPLETED / TOOL_FAILED). Span timestamps are the events' ``created_at``,
so the trace matches the stored log. Attribute values and error texts pass
through the kernel's redactor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from avo.events import AgentEvent, EventType
from avo.hookspecs import hookimpl
from avo.redaction import Redactor
from avo.usage import Rates, estimate_cost
from avo_otel import attributes as attrs

_TERMINAL = {
    EventType.RUN_COMPLETED,
    EventType.RUN_FAILED,
    EventType.RUN_STOPPED,
    EventType.RUN_CANCELLED,
}


def _ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


@dataclass
class _RunSpans:
    root: Span
    turn_started: datetime | None = None
    tools: dict[str, Span] = field(default_factory=dict)


class OtelPlugin:
    """A pluggy plugin that turns a run's events into OpenTelemetry spans."""

    def __init__(
        self,
        tracer: trace.Tracer,
        *,
        rates: Rates | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.tracer = tracer
        self.rates = rates
        self._redactor = Redactor(environ=environ)
        self._runs: dict[str, _RunSpans] = {}

    def _text(self, value: Any) -> str:
        return self._redactor.text(str(value))

    def _child(self, run: _RunSpans, name: str, start: datetime, **attributes: Any) -> Span:
        context = trace.set_span_in_context(run.root)
        clean = {k: v for k, v in attributes.items() if v is not None}
        return self.tracer.start_span(
            name, context=context, start_time=_ns(start), attributes=clean
        )

    def _start_run(self, event: AgentEvent, *, resumed: bool) -> _RunSpans:
        root = self.tracer.start_span(
            attrs.RUN_SPAN,
            start_time=_ns(event.created_at),
            attributes={attrs.RUN_ID: event.run_id, attrs.RESUMED: resumed},
        )
        spans = self._runs[event.run_id] = _RunSpans(root)
        return spans

    @hookimpl
    def avo_event_appended(self, event: AgentEvent) -> None:
        """Open or close the spans this event starts or ends."""
        kind = event.event_type
        payload = event.payload
        if kind is EventType.RUN_CREATED:
            self._start_run(event, resumed=False)
            return
        run = self._runs.get(event.run_id)
        if run is None:
            if kind is not EventType.RUN_RESUMED:
                return  # a run that started before this plugin was registered
            run = self._start_run(event, resumed=True)
        if kind is EventType.STATE_CHANGED and payload.get("to_state") == "model_pending":
            run.turn_started = event.created_at
        elif kind is EventType.MODEL_RESPONDED:
            self._turn(run, event)
        elif kind is EventType.MODEL_FAILED:
            span = self._child(
                run,
                attrs.TURN_SPAN,
                run.turn_started or event.created_at,
                **{attrs.RUN_ID: event.run_id, attrs.STEP: payload.get("step")},
            )
            span.set_status(Status(StatusCode.ERROR, self._text(payload.get("error", ""))))
            span.end(end_time=_ns(event.created_at))
        elif kind is EventType.TOOL_STARTED:
            name = str(payload.get("name", "tool"))
            call_id = str(payload.get("tool_call_id", ""))
            run.tools[call_id] = self._child(
                run,
                f"{attrs.TOOL_SPAN_PREFIX} {name}",
                event.created_at,
                **{
                    attrs.RUN_ID: event.run_id,
                    attrs.OPERATION: "execute_tool",
                    attrs.TOOL_NAME: name,
                    attrs.TOOL_CALL_ID: call_id,
                },
            )
        elif kind in (EventType.TOOL_COMPLETED, EventType.TOOL_FAILED):
            tool_span = run.tools.pop(str(payload.get("tool_call_id", "")), None)
            if tool_span is not None:
                span = tool_span
                success = kind is EventType.TOOL_COMPLETED
                span.set_attribute(attrs.TOOL_SUCCESS, success)
                if not success:
                    span.set_status(Status(StatusCode.ERROR, self._text(payload.get("error"))))
                span.end(end_time=_ns(event.created_at))
        elif kind in _TERMINAL:
            self._finish(run, event)

    def _turn(self, run: _RunSpans, event: AgentEvent) -> None:
        payload = event.payload
        duration = payload.get("duration_ms")
        start = event.created_at
        if isinstance(duration, int | float) and duration >= 0:
            start = event.created_at - timedelta(milliseconds=float(duration))
        usage = payload.get("usage")
        span = self._child(
            run,
            attrs.TURN_SPAN,
            start,
            **{
                attrs.RUN_ID: event.run_id,
                attrs.OPERATION: "chat",
                attrs.STEP: payload.get("step"),
                attrs.SYSTEM: payload.get("provider"),
                attrs.REQUEST_MODEL: payload.get("model"),
            },
        )
        if isinstance(usage, dict):
            input_tokens = _int(usage.get("input_tokens"))
            output_tokens = _int(usage.get("output_tokens"))
            span.set_attribute(attrs.INPUT_TOKENS, input_tokens)
            span.set_attribute(attrs.OUTPUT_TOKENS, output_tokens)
            if self.rates is not None:
                from avo.models import TokenUsage

                cost = estimate_cost(
                    TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens),
                    rates=self.rates,
                )
                if cost is not None:
                    span.set_attribute(attrs.COST_USD, float(cost))
        response = payload.get("response")
        calls: Any = response.get("tool_calls") if isinstance(response, dict) else None
        if not calls and isinstance(response, dict) and response.get("tool_call"):
            calls = [response["tool_call"]]  # a log written before parallel tool calls
        calls = [call for call in calls or () if isinstance(call, dict)]
        if calls:  # one decision may ask for several calls: the first names the span
            span.set_attribute(attrs.TOOL_NAME, str(calls[0].get("name", "")))
            span.set_attribute(attrs.TOOL_CALL_ID, str(calls[0].get("tool_call_id", "")))
        span.end(end_time=_ns(event.created_at))

    def _finish(self, run: _RunSpans, event: AgentEvent) -> None:
        payload = event.payload
        end = _ns(event.created_at)
        for span in run.tools.values():  # a tool that never reported back
            span.set_status(Status(StatusCode.ERROR, "the run ended before the tool finished"))
            span.end(end_time=end)
        root = run.root
        root.set_attribute(attrs.STATE, str(payload.get("state", "")))
        root.set_attribute(attrs.STOP_REASON, str(payload.get("stop_reason", "")))
        root.set_attribute(attrs.STEPS, _int(payload.get("steps")))
        usage = payload.get("token_usage")
        if isinstance(usage, dict):
            root.set_attribute(attrs.TOTAL_INPUT_TOKENS, _int(usage.get("input_tokens")))
            root.set_attribute(attrs.TOTAL_OUTPUT_TOKENS, _int(usage.get("output_tokens")))
        if event.event_type is EventType.RUN_FAILED:
            root.set_status(Status(StatusCode.ERROR, self._text(payload.get("error", ""))))
        root.end(end_time=end)
        del self._runs[event.run_id]

    @classmethod
    def from_env(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        service_name: str | None = None,
        exporter: Any = None,
        rates: Rates | None = None,
    ) -> OtelPlugin:
        """Gate on ``AVO_OTEL_ENABLED`` and configure the tracer (kernel front door)."""
        from avo.observability import configure_tracer

        tracer = configure_tracer(service_name=service_name, environ=environ, exporter=exporter)
        return cls(tracer, rates=rates, environ=environ)


__all__ = ["OtelPlugin"]
