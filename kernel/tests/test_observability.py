import pytest

from avo import observability
from avo.exceptions import AvoError
from avo.observability import (
    MISSING_EXTRA_MESSAGE,
    OtelDisabledError,
    configure_tracer,
    is_enabled,
    record_tool_call,
    record_usage,
    span_for_turn,
)


@pytest.mark.parametrize("value", ["1", "true", "YES", "on"])
def test_gate_truthy(value):
    assert is_enabled({"AVO_OTEL_ENABLED": value})


@pytest.mark.parametrize("value", ["", "0", "false", "nope"])
def test_gate_falsy(value):
    assert not is_enabled({"AVO_OTEL_ENABLED": value})
    assert not is_enabled({})


def test_configure_tracer_refuses_when_gate_off():
    with pytest.raises(OtelDisabledError, match="AVO_OTEL_ENABLED=1"):
        configure_tracer(environ={})
    assert issubclass(OtelDisabledError, AvoError)


def test_configure_tracer_names_the_extra_when_backend_missing(monkeypatch):
    monkeypatch.setattr(observability, "_backend", lambda: None)
    with pytest.raises(OtelDisabledError) as info:
        configure_tracer(environ={"AVO_OTEL_ENABLED": "1"})
    assert str(info.value) == MISSING_EXTRA_MESSAGE
    assert "pip install avo[otel]" in str(info.value)


def test_span_helpers_are_no_ops_when_disabled():
    with span_for_turn("r1", provider="fake", model="m", environ={}) as span:
        assert span is None
        record_tool_call(span, "echo", call_id="c1")
        record_usage(span, input_tokens=1, output_tokens=2)


def test_kernel_does_not_import_opentelemetry():
    import subprocess
    import sys

    code = (
        "import sys, avo.observability as o; o.is_enabled({}); "
        "assert not any(m.startswith('opentelemetry') for m in sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
