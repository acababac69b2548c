"""One run with OTel enabled -> one trace whose spans match the run's events."""

from decimal import Decimal

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from avo import observability
from avo.events import EventType
from avo.models import ModelResponse, TokenUsage, ToolCall
from avo.plugins.manager import PluginManager
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.tools import FunctionTool
from avo_otel import OtelPlugin
from avo_otel import tracer as backend

ENABLED = {"AVO_OTEL_ENABLED": "1", "AVO_OTEL_SERVICE_NAME": "avo-test"}


class EchoArgs(BaseModel):
    text: str


def echo(args: EchoArgs) -> dict:
    return {"echo": args.text}


class BoomArgs(BaseModel):
    pass


def boom(args: BoomArgs) -> dict:
    raise RuntimeError("tool exploded")


class NamedFake(FakeProvider):
    name = "anthropic"
    model = "claude-test-1"


def make_runtime(exporter, script, *, rates=None):
    plugin = OtelPlugin.from_env(environ=ENABLED, exporter=exporter, rates=rates)
    manager = PluginManager(autoload=False, environ={})
    manager.register(plugin, "otel")
    tools = [
        FunctionTool(name="echo", description="echo", arguments_model=EchoArgs, function=echo),
        FunctionTool(name="boom", description="boom", arguments_model=BoomArgs, function=boom),
    ]
    return AgentRuntime(provider=NamedFake(script), tools=tools, plugins=manager)


async def test_one_trace_matches_the_run_events():
    exporter = InMemorySpanExporter()
    script = [
        ModelResponse(
            tool_call=ToolCall(tool_call_id="call-1", name="echo", arguments={"text": "hi"}),
            usage=TokenUsage(input_tokens=100, output_tokens=20),
        ),
        ModelResponse(
            tool_call=ToolCall(tool_call_id="call-2", name="boom", arguments={}),
            usage=TokenUsage(input_tokens=150, output_tokens=30),
        ),
        ModelResponse(content="done", usage=TokenUsage(input_tokens=200, output_tokens=40)),
    ]
    runtime = make_runtime(exporter, script, rates=(Decimal("1"), Decimal("2")))
    result = await runtime.run("say hi")
    assert result.status.value == "completed"
    events = await runtime.event_store.get_events(result.run_id)
    spans = exporter.get_finished_spans()

    # one trace, one root
    assert len({s.context.trace_id for s in spans}) == 1
    roots = [s for s in spans if s.parent is None]
    assert [r.name for r in roots] == ["avo.run"]
    root = roots[0]
    assert all(s.parent.span_id == root.context.span_id for s in spans if s is not root)
    assert root.resource.attributes["service.name"] == "avo-test"
    assert root.attributes["avo.run_id"] == result.run_id
    assert root.attributes["avo.state"] == "completed"
    assert root.attributes["avo.steps"] == result.steps == 3
    assert root.attributes["avo.usage.input_tokens"] == result.token_usage.input_tokens

    # a turn span per MODEL_RESPONDED, same order, same usage/provider/model
    responded = [e for e in events if e.event_type is EventType.MODEL_RESPONDED]
    turns = sorted((s for s in spans if s.name == "avo.turn"), key=lambda s: s.start_time)
    assert len(turns) == len(responded) == 3
    for span, event in zip(turns, responded, strict=True):
        usage = event.payload["usage"]
        assert span.attributes["gen_ai.system"] == event.payload["provider"] == "anthropic"
        assert span.attributes["gen_ai.request.model"] == event.payload["model"]
        assert span.attributes["gen_ai.usage.input_tokens"] == usage["input_tokens"]
        assert span.attributes["gen_ai.usage.output_tokens"] == usage["output_tokens"]
        assert span.attributes["avo.step"] == event.payload["step"]
        assert span.end_time == int(event.created_at.timestamp() * 1e9)
    assert turns[0].attributes["gen_ai.tool.name"] == "echo"
    assert turns[0].attributes["avo.cost_usd"] == pytest.approx(0.14)  # 0.1 + 0.04
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in turns) == (
        result.token_usage.input_tokens
    )

    # a tool span per TOOL_STARTED, closed by its result event
    started = [e for e in events if e.event_type is EventType.TOOL_STARTED]
    tools = sorted(
        (s for s in spans if s.name.startswith("execute_tool")), key=lambda s: s.start_time
    )
    assert [s.name for s in tools] == ["execute_tool echo", "execute_tool boom"]
    assert [s.attributes["gen_ai.tool.call.id"] for s in tools] == [
        e.payload["tool_call_id"] for e in started
    ]
    assert tools[0].attributes["avo.tool.success"] is True
    assert tools[0].status.status_code is StatusCode.UNSET
    assert tools[1].attributes["avo.tool.success"] is False
    assert tools[1].status.status_code is StatusCode.ERROR
    assert "tool exploded" in tools[1].status.description
    assert len(spans) == 1 + 3 + 2


async def test_failed_provider_marks_error_spans():
    exporter = InMemorySpanExporter()
    runtime = make_runtime(exporter, [])  # exhausted script -> provider error
    result = await runtime.run("x")
    assert result.status.value == "failed"
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["avo.turn"].status.status_code is StatusCode.ERROR
    assert spans["avo.run"].status.status_code is StatusCode.ERROR
    assert spans["avo.run"].attributes["avo.stop_reason"] == "provider_error"


def test_front_door_delegates_to_this_backend():
    exporter = InMemorySpanExporter()
    tracer = observability.configure_tracer(environ=ENABLED, exporter=exporter)
    assert tracer is not None and backend.current_exporter() is exporter
    with observability.span_for_turn("run-9", "openai", "gpt-x", environ=ENABLED) as span:
        observability.record_tool_call(span, "grep", call_id="c9")
        observability.record_usage(span, input_tokens=7, output_tokens=3, cost_usd=Decimal("0.5"))
    (finished,) = exporter.get_finished_spans()
    assert finished.name == "avo.turn"
    assert dict(finished.attributes) == {
        "avo.run_id": "run-9",
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.tool.name": "grep",
        "gen_ai.tool.call.id": "c9",
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 3,
        "avo.cost_usd": 0.5,
    }


def test_gate_off_refuses_and_default_exporter_is_in_memory():
    with pytest.raises(observability.OtelDisabledError):
        OtelPlugin.from_env(environ={})
    observability.configure_tracer(environ=ENABLED)
    # The default exporter is OTLP when the [otlp] extra is installed, else in-memory.
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    except ImportError:
        assert isinstance(backend.current_exporter(), InMemorySpanExporter)
    else:
        assert isinstance(backend.current_exporter(), OTLPSpanExporter)


async def test_events_of_unknown_runs_are_ignored():
    from avo.events import AgentEvent
    from avo.models import utc_now

    exporter = InMemorySpanExporter()
    plugin = OtelPlugin(backend.configure_tracer(exporter=exporter, environ=ENABLED))
    plugin.avo_event_appended(
        AgentEvent(
            event_id="e", run_id="r", event_type=EventType.TOOL_STARTED, created_at=utc_now()
        )
    )
    assert exporter.get_finished_spans() == ()


async def test_avo_toml_enables_tracing_through_the_otel_hook(tmp_path, monkeypatch):
    from avo.compose import compose
    from avo_otel.hooks import otel

    exporter = InMemorySpanExporter()
    real_build = backend.build_provider

    def build_in_memory(*, service_name=None, environ=None, exporter=None):
        return real_build(service_name=service_name, environ=environ, exporter=memory)

    memory = exporter
    monkeypatch.setattr(backend, "build_provider", build_in_memory)
    monkeypatch.setenv("AVO_OTEL_ENABLED", "1")  # the hook factory reads the process env
    config = tmp_path / "avo.toml"
    config.write_text(
        """
hooks = [{name = "otel", settings = {service_name = "from-toml"}}]
[store]
name = "memory"
[provider]
name = "fake"
[[provider.settings.script]]
content = "traced"
usage = {input_tokens = 3, output_tokens = 1}
"""
    )
    try:
        composition = compose(config, environ={"AVO_OTEL_ENABLED": "1"})
        async with composition:
            result = await composition.runtime.run("x")
    finally:
        otel.disable()
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == ["avo.run", "avo.turn"]
    root = next(s for s in spans if s.name == "avo.run")
    assert root.attributes["avo.run_id"] == result.run_id
    assert root.resource.attributes["service.name"] == "from-toml"
    turn = next(s for s in spans if s.name == "avo.turn")
    assert turn.attributes["gen_ai.usage.input_tokens"] == 3


def test_otel_hook_refuses_when_the_gate_is_off():
    from avo_otel.hooks import otel

    with pytest.raises(observability.OtelDisabledError):
        otel.spec.factory({}, environ={})
    assert otel.observer is None
