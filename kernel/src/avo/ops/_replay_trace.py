"""The comparable trace of a run's log, for :mod:`avo.ops.replay`.

A recorded log and a replayed one can only differ in ways that matter once
the bookkeeping is taken out, so both are reduced to the same trace:

* events a resume superseded are dropped: after a crash, everything between
  the checkpoint a run resumed from and its ``run_resumed`` was done again,
  unless the resume recovered a tool result (then those events stand);
* checkpoints, ``run_resumed``, moves into ``paused`` and moves back to the
  state a run paused from are dropped, and a ``state_changed`` is compared by
  its target state only, consecutive repeats folded;
* events of what replay does not run — hook faults, request shaping and
  compaction by shapers — are dropped;
* the starts and results of a turn's tool calls, which run concurrently, are
  compared in one order (starts, then results, by call) rather than the order
  timing gave them;
* a person's answers (``human_input_received``) are played back, not
  compared; who decided a call (``decided_by``, ``blocked_by``) is not
  compared either (replay decides from the recording: no hooks, no people),
  while the decision, its rule and its reason are; nor whether an approval
  says its arguments came from a hook (``hook_arguments``: a run resumed in
  another process says so, one answered in place does not; replay answers in
  place), while the arguments are;
* values that differ on every run are dropped: durations, timestamps,
  elapsed seconds, checkpoint ids; a ``model_failed`` keeps its step, retry
  flag and error count (its text came from a provider that replay does not
  call); ``run_created`` keeps the task and system prompt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from avo.events import AgentEvent, EventType
from avo.state import RunState

VOLATILE_KEYS = frozenset(
    {
        "duration_ms",
        "elapsed_seconds",
        "started_at",
        "finished_at",
        "created_at",
        "updated_at",
        "checkpoint_id",
        "checkpoint_sequence",
        "duration_seconds",
        "message_id",
        "posted_at",
    }
)
NOT_REPLAYED = frozenset({"hook_failed", "request_shaped", "context_compacted", "tool_progress"})
"""Events of parts replay does not run (hooks, request shapers, tools' progress): not compared."""
_CREATED_KEYS: tuple[str, ...] = ("task", "system_prompt")
_FAILED_KEYS: tuple[str, ...] = ("step", "retryable", "consecutive_errors")
_PAUSED = RunState.PAUSED.value


def _strip(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def effective_events(events: list[AgentEvent]) -> list[AgentEvent]:
    """``events`` without the ones a later resume superseded (done again after a crash).

    A resume continues from a checkpoint: whatever was logged between that
    checkpoint and the ``run_resumed`` is done again, unless the resume
    recovered a tool result logged there (it then moves on from another state
    than the checkpoint's, and those events stand).
    """
    checkpoint_state = {
        e.payload.get("checkpoint_id"): e.payload.get("state")
        for e in events
        if e.event_type is EventType.CHECKPOINT_CREATED
    }
    superseded: set[int] = set()
    for event in events:
        if event.event_type is not EventType.RUN_RESUMED:
            continue
        start = event.payload.get("checkpoint_sequence")
        target = event.payload.get("state")
        recovered = target != checkpoint_state.get(event.payload.get("checkpoint_id"), target)
        if not isinstance(start, int) or recovered:
            continue
        superseded.update(range(start + 1, event.sequence))
    return [e for e in events if e.sequence not in superseded]


def _entry(event: AgentEvent) -> dict[str, Any] | None:
    kind = event.event_type
    payload: dict[str, Any] = dict(event.payload)
    if kind in (EventType.CHECKPOINT_CREATED, EventType.RUN_RESUMED) or kind in NOT_REPLAYED:
        return None
    if kind is EventType.HUMAN_INPUT_RECEIVED:  # a person's answer: played back, not compared
        return None
    if kind is EventType.HUMAN_INPUT_REQUESTED:
        payload.pop("expires_at", None)  # a moment on the clock of the run
        payload.pop("risk", None)  # the tool's declared risk: replay does not load tools
    elif kind is EventType.TOOL_APPROVED:
        payload.pop("decided_by", None)  # replay decides from the recording, not the parties
        # a hook's arguments are compared; whether an approval restated them (a run resumed
        # elsewhere does, one answered in place does not) is not
        payload.pop("hook_arguments", None)
    elif kind is EventType.TOOL_DENIED:
        payload.pop("blocked_by", None)
    if kind is EventType.STATE_CHANGED:
        target = payload.get("to_state")
        return None if target == _PAUSED else {"type": kind.value, "to_state": target}
    if kind is EventType.RUN_CREATED:
        kept: dict[str, Any] = {k: payload[k] for k in _CREATED_KEYS if k in payload}
        return {"type": kind.value, **kept}
    if kind is EventType.MODEL_FAILED:
        kept = {k: payload.get(k) for k in _FAILED_KEYS}
        return {"type": kind.value, **kept}
    return {"type": kind.value, **_strip(payload)}


_EXECUTION = frozenset(
    {EventType.TOOL_STARTED.value, EventType.TOOL_COMPLETED.value, EventType.TOOL_FAILED.value}
)


def _settle_parallel_calls(trace: list[tuple[int, dict[str, Any]]]) -> None:
    """Put each run of tool starts and results in one order: starts, then results, by call.

    Calls of one turn run concurrently, so the order their starts and results
    were logged in is timing, not behaviour.
    """
    order: dict[Any, int] = {}
    for _, entry in trace:
        if entry["type"] == EventType.TOOL_REQUESTED.value:
            order.setdefault(entry.get("tool_call_id"), len(order))
    index = 0
    while index < len(trace):
        end = index
        while end < len(trace) and trace[end][1]["type"] in _EXECUTION:
            end += 1
        if end - index > 1:
            block = trace[index:end]
            sequences = sorted(sequence for sequence, _ in block)
            block.sort(
                key=lambda item: (
                    item[1]["type"] != EventType.TOOL_STARTED.value,
                    order.get(item[1].get("tool_call_id"), len(order)),
                )
            )
            pairs = zip(sequences, block, strict=True)
            trace[index:end] = [(seq, entry) for seq, (_, entry) in pairs]
        index = max(end, index + 1)


def comparable(events: Iterable[AgentEvent]) -> list[tuple[int, dict[str, Any]]]:
    """``(sequence, entry)`` pairs of the run's comparable trace (see the module docstring)."""
    ordered = sorted(events, key=lambda e: e.sequence)
    trace: list[tuple[int, dict[str, Any]]] = []
    paused_from: Any = None
    for event in effective_events(ordered):
        if event.event_type is EventType.STATE_CHANGED:
            source, target = event.payload.get("from_state"), event.payload.get("to_state")
            if target == _PAUSED:
                paused_from = source
            elif source == _PAUSED and target == paused_from:
                continue  # back to where it paused (a person answered): nothing happened
        entry = _entry(event)
        if entry is None:
            continue
        if entry["type"] == EventType.STATE_CHANGED.value and trace and trace[-1][1] == entry:
            continue
        trace.append((event.sequence, entry))
    _settle_parallel_calls(trace)
    return trace


def first_difference(
    recorded: dict[str, Any], replayed: dict[str, Any], prefix: str = ""
) -> str | None:
    """The dotted key of the first value that differs between two entries (None: equal)."""
    for key in sorted(set(recorded) | set(replayed)):
        left, right = recorded.get(key, "<absent>"), replayed.get(key, "<absent>")
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(left, dict) and isinstance(right, dict):
            inner = first_difference(left, right, dotted)
            if inner is not None:
                return inner
        elif left != right:
            return dotted
    return None


__all__ = ["NOT_REPLAYED", "VOLATILE_KEYS", "comparable", "effective_events", "first_difference"]
