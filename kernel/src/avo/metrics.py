"""In-process metrics with bounded cardinality.

``MetricsRegistry`` keeps counters, gauges and histograms keyed by a name and a
label set. Every distinct ``(name, labels)`` pair is one series; creating more
than ``max_cardinality`` series raises :class:`MetricsError`, so a label fed by
unbounded input (a run id, a path) fails loudly instead of eating memory.
:meth:`MetricsRegistry.snapshot` returns immutable values;
:meth:`MetricsSnapshot.to_prometheus` renders the text exposition format.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from avo.exceptions import AvoError
from avo.hookspecs import hookimpl

_DEFAULT_HISTOGRAM_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:.]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

Labels = Mapping[str, str]
_LabelKey = tuple[tuple[str, str], ...]


class MetricsError(AvoError):
    """A metric was misused (bad name, negative counter add, too many series)."""


@dataclass(frozen=True)
class CounterSnapshot:
    """A monotonically increasing total."""

    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class GaugeSnapshot:
    """A value that goes up and down."""

    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class HistogramSnapshot:
    """Observations counted into cumulative ``le`` buckets."""

    name: str
    labels: dict[str, str]
    buckets: tuple[float, ...]
    counts: tuple[int, ...]
    """Cumulative count per bucket bound (``counts[i]`` observations ``<= buckets[i]``)."""
    count: int
    sum: float


@dataclass(frozen=True)
class MetricsSnapshot:
    """Every series at one moment."""

    counters: list[CounterSnapshot] = field(default_factory=list)
    gauges: list[GaugeSnapshot] = field(default_factory=list)
    histograms: list[HistogramSnapshot] = field(default_factory=list)

    def counter_value(self, name: str, labels: Labels | None = None) -> float:
        """The value of one counter series (0 when absent)."""
        want = dict(labels or {})
        return next((c.value for c in self.counters if c.name == name and c.labels == want), 0.0)

    def to_prometheus(self) -> str:
        """The Prometheus text exposition of this snapshot."""

        def fmt(labels: Mapping[str, str], extra: tuple[str, str] | None = None) -> str:
            items = [*sorted(labels.items()), *([extra] if extra else [])]
            if not items:
                return ""
            body = ",".join(f'{k}="{_escape(v)}"' for k, v in items)
            return "{" + body + "}"

        lines: list[str] = []
        for c in self.counters:
            lines.append(f"{_prom(c.name)}{fmt(c.labels)} {c.value:g}")
        for g in self.gauges:
            lines.append(f"{_prom(g.name)}{fmt(g.labels)} {g.value:g}")
        for h in self.histograms:
            base = _prom(h.name)
            for bound, count in zip(h.buckets, h.counts, strict=True):
                lines.append(f"{base}_bucket{fmt(h.labels, ('le', f'{bound:g}'))} {count}")
            lines.append(f"{base}_bucket{fmt(h.labels, ('le', '+Inf'))} {h.count}")
            lines.append(f"{base}_sum{fmt(h.labels)} {h.sum:g}")
            lines.append(f"{base}_count{fmt(h.labels)} {h.count}")
        return "\n".join(lines) + ("\n" if lines else "")


def _prom(name: str) -> str:
    return name.replace(".", "_")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _Histogram:
    __slots__ = ("buckets", "count", "counts", "total")

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.total += value
        for index, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[index] += 1


class MetricsRegistry:
    """Counters, gauges and histograms with at most ``max_cardinality`` series."""

    def __init__(self, *, max_cardinality: int = 1024) -> None:
        if max_cardinality < 1:
            raise MetricsError(f"max_cardinality must be >= 1, got {max_cardinality}")
        self.max_cardinality = max_cardinality
        self._lock = threading.Lock()
        self._kinds: dict[str, str] = {}
        self._counters: dict[tuple[str, _LabelKey], float] = {}
        self._gauges: dict[tuple[str, _LabelKey], float] = {}
        self._histograms: dict[tuple[str, _LabelKey], _Histogram] = {}

    @property
    def series_count(self) -> int:
        """How many distinct (name, labels) series exist."""
        return len(self._counters) + len(self._gauges) + len(self._histograms)

    def _key(self, kind: str, name: str, labels: Labels | None) -> tuple[str, _LabelKey]:
        if not isinstance(name, str) or not _NAME.match(name):
            raise MetricsError(
                f"invalid metric name {name!r}: use letters, digits, '_', ':' or '.'"
            )
        known = self._kinds.get(name)
        if known is not None and known != kind:
            raise MetricsError(f"metric {name!r} is a {known}, not a {kind}")
        items: list[tuple[str, str]] = []
        for label, value in (labels or {}).items():
            if not _LABEL.match(label):
                raise MetricsError(f"invalid label name {label!r} on metric {name!r}")
            items.append((label, str(value)))
        return name, tuple(sorted(items))

    def _admit(
        self, kind: str, key: tuple[str, _LabelKey], store: Mapping[tuple[str, _LabelKey], object]
    ) -> None:
        if key in store:
            return
        if self.series_count >= self.max_cardinality:
            raise MetricsError(
                f"metric {key[0]!r} would create series {dict(key[1])!r} past "
                f"max_cardinality={self.max_cardinality}; a label is probably unbounded "
                "(ids, paths) — drop it or raise the limit"
            )
        self._kinds[key[0]] = kind

    def counter(self, name: str, *, labels: Labels | None = None) -> None:
        """Increment the counter ``name`` by one."""
        self.add(name, 1, labels=labels)

    def add(self, name: str, amount: float, *, labels: Labels | None = None) -> None:
        """Increase the counter ``name`` by ``amount`` (which must be >= 0)."""
        if not math.isfinite(amount) or amount < 0:
            raise MetricsError(f"counter {name!r} can only grow; got amount={amount!r}")
        with self._lock:
            key = self._key("counter", name, labels)
            self._admit("counter", key, self._counters)
            self._counters[key] = self._counters.get(key, 0.0) + amount

    def gauge(self, name: str, value: float, *, labels: Labels | None = None) -> None:
        """Set the gauge ``name`` to ``value``."""
        if not math.isfinite(value):
            raise MetricsError(f"gauge {name!r} needs a finite value, got {value!r}")
        with self._lock:
            key = self._key("gauge", name, labels)
            self._admit("gauge", key, self._gauges)
            self._gauges[key] = float(value)

    def observe(
        self,
        name: str,
        value: float,
        *,
        labels: Labels | None = None,
        buckets: Sequence[float] = _DEFAULT_HISTOGRAM_BUCKETS,
    ) -> None:
        """Record ``value`` into the histogram ``name``."""
        if not math.isfinite(value):
            raise MetricsError(f"histogram {name!r} needs a finite value, got {value!r}")
        bounds = tuple(float(b) for b in buckets)
        if not bounds or list(bounds) != sorted(set(bounds)):
            raise MetricsError(f"histogram {name!r} buckets must be strictly increasing")
        with self._lock:
            key = self._key("histogram", name, labels)
            self._admit("histogram", key, self._histograms)
            histogram = self._histograms.get(key)
            if histogram is None:
                histogram = self._histograms[key] = _Histogram(bounds)
            elif histogram.buckets != bounds:
                raise MetricsError(f"histogram {name!r} was created with other buckets")
            histogram.observe(float(value))

    def snapshot(self) -> MetricsSnapshot:
        """An immutable copy of every series, sorted by name then labels."""
        with self._lock:
            return MetricsSnapshot(
                counters=[
                    CounterSnapshot(name, dict(lbl), value)
                    for (name, lbl), value in sorted(self._counters.items())
                ],
                gauges=[
                    GaugeSnapshot(name, dict(lbl), value)
                    for (name, lbl), value in sorted(self._gauges.items())
                ],
                histograms=[
                    HistogramSnapshot(name, dict(lbl), h.buckets, tuple(h.counts), h.count, h.total)
                    for (name, lbl), h in sorted(self._histograms.items(), key=lambda i: i[0])
                ],
            )

    def reset(self) -> None:
        """Drop every series."""
        with self._lock:
            self._kinds.clear()
            self._counters.clear()
            self._gauges.clear()
            self._histograms.clear()


class MetricsObserver:
    """A pluggy plugin that counts a runtime's events into a :class:`MetricsRegistry`.

    Register it on the runtime's plugin manager
    (``manager.register(MetricsObserver(registry), "metrics")``). Series, all with
    bounded labels (event type, provider, model, tool name, outcome):

    * ``avo.events`` {event_type} — every stored event;
    * ``avo.model_calls`` {provider, model}, ``avo.model_failures`` {provider, model};
    * ``avo.tokens`` {provider, model, direction=input|output};
    * ``avo.model_latency_seconds`` {provider, model} — histogram of ``duration_ms``;
    * ``avo.tool_calls`` {tool, outcome=completed|failed};
    * ``avo.runs_finished`` {state, stop_reason}; ``avo.runs_active`` gauge.
    """

    def __init__(self, registry: MetricsRegistry) -> None:
        self.registry = registry
        self._active: set[str] = set()
        self._last_model: dict[str, tuple[str, str]] = {}

    @hookimpl
    def avo_event_appended(self, event: Any) -> None:
        """Count one stored event."""
        reg = self.registry
        kind = str(getattr(event.event_type, "value", event.event_type))
        payload: Mapping[str, Any] = event.payload
        reg.counter("avo.events", labels={"event_type": kind})
        if kind in ("run_created", "run_resumed"):
            self._active.add(event.run_id)
        elif kind == "model_responded":
            labels = {
                "provider": str(payload.get("provider") or "unknown"),
                "model": str(payload.get("model") or "unknown"),
            }
            self._last_model[event.run_id] = (labels["provider"], labels["model"])
            reg.counter("avo.model_calls", labels=labels)
            usage = payload.get("usage")
            if isinstance(usage, Mapping):
                for direction in ("input", "output"):
                    amount = usage.get(f"{direction}_tokens") or 0
                    reg.add("avo.tokens", float(amount), labels={**labels, "direction": direction})
            duration = payload.get("duration_ms")
            if isinstance(duration, int | float) and duration >= 0:
                reg.observe("avo.model_latency_seconds", duration / 1000, labels=labels)
        elif kind == "model_failed":
            provider, model = self._last_model.get(event.run_id, ("unknown", "unknown"))
            reg.counter("avo.model_failures", labels={"provider": provider, "model": model})
        elif kind in ("tool_completed", "tool_failed"):
            outcome = "completed" if kind == "tool_completed" else "failed"
            tool = str(payload.get("name") or "unknown")
            reg.counter("avo.tool_calls", labels={"tool": tool, "outcome": outcome})
        elif kind in ("run_completed", "run_failed", "run_stopped", "run_cancelled"):
            self._active.discard(event.run_id)
            self._last_model.pop(event.run_id, None)
            reg.counter(
                "avo.runs_finished",
                labels={
                    "state": str(payload.get("state") or kind.removeprefix("run_")),
                    "stop_reason": str(payload.get("stop_reason") or "unknown"),
                },
            )
        reg.gauge("avo.runs_active", len(self._active))


__all__ = [
    "CounterSnapshot",
    "GaugeSnapshot",
    "HistogramSnapshot",
    "MetricsError",
    "MetricsObserver",
    "MetricsRegistry",
    "MetricsSnapshot",
]
