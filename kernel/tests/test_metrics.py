import threading

import pytest

from avo.metrics import MetricsError, MetricsRegistry


def test_counters_gauges_histograms_snapshot():
    reg = MetricsRegistry()
    reg.counter("avo.model_calls", labels={"provider": "fake"})
    reg.add("avo.model_calls", 2, labels={"provider": "fake"})
    reg.add("avo.tokens", 150)
    reg.gauge("avo.active_runs", 3)
    reg.gauge("avo.active_runs", 1)
    reg.observe("avo.latency", 0.2, buckets=(0.1, 0.5, 1.0))
    reg.observe("avo.latency", 0.7, buckets=(0.1, 0.5, 1.0))
    snap = reg.snapshot()
    assert snap.counter_value("avo.model_calls", {"provider": "fake"}) == 3
    assert snap.counter_value("avo.tokens") == 150
    assert snap.gauges[0].value == 1
    h = snap.histograms[0]
    assert h.counts == (0, 1, 2) and h.count == 2 and h.sum == pytest.approx(0.9)
    text = snap.to_prometheus()
    assert 'avo_model_calls{provider="fake"} 3' in text
    assert 'avo_latency_bucket{le="0.5"} 1' in text
    assert 'avo_latency_bucket{le="+Inf"} 2' in text
    assert "avo_latency_count 2" in text


def test_cardinality_is_bounded():
    reg = MetricsRegistry(max_cardinality=3)
    for i in range(3):
        reg.counter("calls", labels={"run_id": str(i)})
    reg.counter("calls", labels={"run_id": "0"})  # existing series is fine
    with pytest.raises(MetricsError, match="max_cardinality=3"):
        reg.counter("calls", labels={"run_id": "3"})
    assert reg.series_count == 3
    reg.reset()
    assert reg.series_count == 0
    reg.counter("calls", labels={"run_id": "new"})


def test_misuse_errors():
    reg = MetricsRegistry()
    with pytest.raises(MetricsError, match="only grow"):
        reg.add("c", -1)
    with pytest.raises(MetricsError, match="invalid metric name"):
        reg.counter("bad name")
    with pytest.raises(MetricsError, match="invalid label"):
        reg.counter("c", labels={"bad-label": "x"})
    reg.counter("c")
    with pytest.raises(MetricsError, match="is a counter"):
        reg.gauge("c", 1)
    with pytest.raises(MetricsError, match="strictly increasing"):
        reg.observe("h", 1, buckets=(2, 1))
    reg.observe("h", 1, buckets=(1, 2))
    with pytest.raises(MetricsError, match="other buckets"):
        reg.observe("h", 1, buckets=(1, 3))
    with pytest.raises(MetricsError):
        MetricsRegistry(max_cardinality=0)


def test_thread_safe_counting():
    reg = MetricsRegistry()

    def work() -> None:
        for _ in range(1000):
            reg.counter("n")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert reg.snapshot().counter_value("n") == 4000


async def test_metrics_observer_counts_a_real_run():
    from avo.metrics import MetricsObserver
    from avo.models import ModelResponse, TokenUsage, ToolCall
    from avo.plugins.manager import PluginManager
    from avo.providers.fake import FakeProvider
    from avo.runtime import AgentRuntime

    registry = MetricsRegistry(max_cardinality=64)
    manager = PluginManager(autoload=False, environ={})
    manager.register(MetricsObserver(registry), "metrics")
    script = [
        ModelResponse(
            tool_call=ToolCall(name="nope", arguments={}),
            usage=TokenUsage(input_tokens=10, output_tokens=2),
        ),
        ModelResponse(content="done", usage=TokenUsage(input_tokens=20, output_tokens=3)),
    ]
    result = await AgentRuntime(provider=FakeProvider(script), plugins=manager).run("x")
    assert result.status.value == "completed"
    snap = registry.snapshot()
    labels = {"provider": "fake", "model": "fake"}
    assert snap.counter_value("avo.model_calls", labels) == 2
    assert snap.counter_value("avo.tokens", {**labels, "direction": "input"}) == 30
    assert snap.counter_value("avo.tokens", {**labels, "direction": "output"}) == 5
    assert snap.counter_value("avo.tool_calls", {"tool": "nope", "outcome": "failed"}) == 1
    finished = {"state": "completed", "stop_reason": "completed"}
    assert snap.counter_value("avo.runs_finished", finished) == 1
    assert snap.counter_value("avo.events", {"event_type": "run_created"}) == 1
    assert [g.value for g in snap.gauges if g.name == "avo.runs_active"] == [0]
    (latency,) = snap.histograms
    assert latency.name == "avo.model_latency_seconds" and latency.count == 2
