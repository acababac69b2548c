"""Compare two stored runs: the ``avo runs diff`` facts plus their first divergent event.

:func:`compare_runs` gives a front end everything a side-by-side view needs:
the structural diff ``avo runs diff`` prints (:class:`avo.run_diff.RunDiff`)
and where the two logs first part ways, found on the same comparable trace
``avo replay`` uses (bookkeeping such as checkpoints and durations left out,
and the ids each run mints for itself), so two runs of the same script show
no divergence while a different tool argument or answer is pinned to the
event that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from avo.exceptions import RunNotFoundError
from avo.ops._replay_trace import comparable, first_difference
from avo.run_diff import RunDiff, diff_runs


@dataclass(frozen=True)
class Divergence:
    """Where two runs' comparable traces first differ.

    ``index`` is the position in the traces; ``sequence_a``/``sequence_b`` the
    events there (None when that run's trace ended first); ``key`` the dotted
    payload key that differs (``type`` when the events are of different kinds,
    None when one trace ended).
    """

    index: int
    sequence_a: int | None
    sequence_b: int | None
    key: str | None


@dataclass(frozen=True)
class RunComparison:
    """The diff of two runs and their first divergent event (None: the traces match)."""

    diff: RunDiff
    divergence: Divergence | None


RUN_OWN_KEYS = frozenset(
    {"response_id", "tool_call_id", "idempotency_key", "run_id", "session_id", "position"}
)
"""Ids every run mints for itself: two runs are compared without them."""


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in RUN_OWN_KEYS}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def first_divergence(events_a: list[Any], events_b: list[Any]) -> Divergence | None:
    """The first place the comparable traces of two event lists differ (ids left out)."""
    trace_a = [(seq, _without_ids(entry)) for seq, entry in comparable(events_a)]
    trace_b = [(seq, _without_ids(entry)) for seq, entry in comparable(events_b)]
    for index in range(max(len(trace_a), len(trace_b))):
        if index >= len(trace_a) or index >= len(trace_b):
            seq_a = trace_a[index][0] if index < len(trace_a) else None
            seq_b = trace_b[index][0] if index < len(trace_b) else None
            return Divergence(index, seq_a, seq_b, None)
        (seq_a, entry_a), (seq_b, entry_b) = trace_a[index], trace_b[index]
        if entry_a.get("type") != entry_b.get("type"):
            return Divergence(index, seq_a, seq_b, "type")
        key = first_difference(entry_a, entry_b)
        if key is not None:
            return Divergence(index, seq_a, seq_b, key)
    return None


async def compare_runs(store: Any, run_a: str, run_b: str) -> RunComparison:
    """Compare ``run_a`` with ``run_b`` (RunNotFoundError naming a missing one)."""
    for run_id in (run_a, run_b):
        if await store.get_run(run_id) is None:
            raise RunNotFoundError(
                f"run {run_id!r} was not found in the event store", run_id=run_id
            )
    diff = await diff_runs(store, run_a, run_b)
    divergence = first_divergence(await store.get_events(run_a), await store.get_events(run_b))
    return RunComparison(diff, divergence)


__all__ = ["RUN_OWN_KEYS", "Divergence", "RunComparison", "compare_runs", "first_divergence"]
