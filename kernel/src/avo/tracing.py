"""Run traces built from the event log.

A :class:`RunTrace` is the one sanctioned way to look at a run after the fact:
it is derived only from the run's events (never from the mutable run head),
so what it shows is exactly what the log proves. ``AgentRuntime.inspect()``
and ``avo runs inspect`` both render :meth:`RunTrace.to_text`.

Totals come from the terminal event when the run has one (it records the
runtime's own accounting); for a run still in flight they are folded from the
MODEL_RESPONDED events so far.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from avo.events import TERMINAL_EVENT_TYPES, AgentEvent, EventType
from avo.exceptions import RunNotFoundError
from avo.models import TokenUsage
from avo.state import RunState, StopReason
from avo.storage.base import EventStore

_PREVIEW = 60


@dataclass(frozen=True)
class TraceEntry:
    """One event of a run, with the facts a reader looks for pulled out."""

    sequence: int
    created_at: datetime
    event_type: EventType
    summary: str
    from_state: RunState | None = None
    to_state: RunState | None = None
    duration_ms: float | None = None
    error: str | None = None
    policy: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.sequence < 1:
            raise ValueError(f"TraceEntry.sequence must be >= 1, got {self.sequence}")


@dataclass(frozen=True)
class RunTrace:
    """A run's whole story: its entries and the outcome they add up to."""

    run_id: str
    entries: list[TraceEntry]
    final_state: RunState | None
    stop_reason: StopReason | None
    steps: int
    duration_seconds: float | None
    token_usage: TokenUsage
    token_accounting_available: bool

    def to_text(self) -> str:
        """Render a header and one aligned line per event."""
        state = self.final_state.value if self.final_state is not None else "unknown"
        reason = self.stop_reason.value if self.stop_reason is not None else "-"
        duration = f"{self.duration_seconds:.3f}s" if self.duration_seconds is not None else "-"
        usage = self.token_usage
        tokens = f"{usage.input_tokens} in / {usage.output_tokens} out ({usage.total_tokens} total)"
        if not self.token_accounting_available:
            tokens += " (incomplete: a provider reported no usage)"
        lines = [
            f"Run {self.run_id}",
            f"  final state: {state}    stop reason: {reason}",
            f"  steps: {self.steps}    duration: {duration}    events: {len(self.entries)}",
            f"  tokens: {tokens}",
        ]
        if not self.entries:
            return "\n".join(lines)
        start = self.entries[0].created_at
        rows = [
            (
                str(entry.sequence),
                f"+{(entry.created_at - start).total_seconds():.3f}s",
                entry.event_type.value,
                entry.summary,
            )
            for entry in self.entries
        ]
        header = ("seq", "time", "event", "details")
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
        lines.append("")
        for row in [header, *rows]:
            lines.append(
                f"  {row[0]:>{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}"
            )
        return "\n".join(lines).rstrip()


class TraceInspector:
    """Builds :class:`RunTrace` values from an event store."""

    def __init__(self, event_store: EventStore) -> None:
        self.event_store = event_store

    async def inspect(self, run_id: str) -> RunTrace:
        """Return the trace of ``run_id``; RunNotFoundError when it has no events."""
        events = await self.event_store.get_events(run_id)
        if not events:
            raise RunNotFoundError(f"run {run_id!r} does not exist", run_id=run_id)
        return self.from_events(events)

    @staticmethod
    def from_events(events: Iterable[AgentEvent]) -> RunTrace:
        """Build a trace from one run's events (any order; sorted by sequence)."""
        ordered = sorted(events, key=lambda event: event.sequence)
        if not ordered:
            raise RunNotFoundError("cannot build a trace from an empty list of events")
        run_id = ordered[0].run_id
        for event in ordered:
            if event.run_id != run_id:
                raise ValueError(
                    f"events of two runs were mixed: {run_id!r} and {event.run_id!r}; "
                    "pass the events of one run"
                )
        return _Fold(run_id).fold(ordered)


# --------------------------------------------------------------------- folding


def _preview(value: object, limit: int = _PREVIEW) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _whole(value: object) -> str:
    """An error on one line, never shortened: the cause of a failure must stay readable."""
    return " ".join(str(value).split())


def _state(value: object) -> RunState | None:
    try:
        return RunState(str(value)) if value is not None else None
    except ValueError:
        return None


def _reason(value: object) -> StopReason | None:
    try:
        return StopReason(str(value)) if value is not None else None
    except ValueError:
        return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _usage(value: object) -> TokenUsage | None:
    usage = _mapping(value)
    if not usage:
        return None
    try:
        return TokenUsage(
            input_tokens=int(usage.get("input_tokens", 0) or 0),
            output_tokens=int(usage.get("output_tokens", 0) or 0),
        )
    except (TypeError, ValueError):
        return None


def _tool_fields(payload: Mapping[str, Any]) -> tuple[str, str, Mapping[str, Any]]:
    """(name, short call id, nested result) from a TOOL_* payload, whatever its nesting."""
    result = _mapping(payload.get("result"))
    call = _mapping(payload.get("tool_call"))
    name = payload.get("name") or payload.get("tool_name") or result.get("tool_name")
    name = name or call.get("name") or "?"
    call_id = payload.get("tool_call_id") or result.get("tool_call_id") or call.get("tool_call_id")
    return str(name), str(call_id or "?")[:8], result


@dataclass
class _Fold:
    run_id: str
    entries: list[TraceEntry] = field(default_factory=list)
    state: RunState | None = None
    stop_reason: StopReason | None = None
    steps: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    accounting: bool = True
    terminal: Mapping[str, Any] | None = None

    def fold(self, events: list[AgentEvent]) -> RunTrace:
        for position, event in enumerate(events, start=1):
            self.entries.append(self._entry(event, position))
        terminal = self.terminal
        if terminal is not None:
            self.state = _state(terminal.get("state")) or self.state
            self.stop_reason = _reason(terminal.get("stop_reason"))
            steps = _number(terminal.get("steps"))
            self.steps = int(steps) if steps is not None else self.steps
            self.usage = _usage(terminal.get("token_usage")) or self.usage
            available = terminal.get("token_accounting_available")
            if isinstance(available, bool):
                self.accounting = available
        duration = (events[-1].created_at - events[0].created_at).total_seconds()
        return RunTrace(
            run_id=self.run_id,
            entries=self.entries,
            final_state=self.state,
            stop_reason=self.stop_reason,
            steps=self.steps,
            duration_seconds=duration,
            token_usage=self.usage,
            token_accounting_available=self.accounting,
        )

    def _entry(self, event: AgentEvent, position: int) -> TraceEntry:
        kind = event.event_type
        payload: dict[str, Any] = dict(event.payload)
        facts: dict[str, Any] = {}
        summary = self._summary(kind, payload, facts)
        return TraceEntry(
            sequence=event.sequence if event.sequence >= 1 else position,
            created_at=event.created_at,
            event_type=kind,
            summary=summary,
            payload=payload,
            **facts,
        )

    def _summary(self, kind: EventType, payload: Mapping[str, Any], facts: dict[str, Any]) -> str:
        if kind is EventType.RUN_CREATED:
            self.state = RunState.CREATED
            return f"task: {_preview(payload.get('task', ''))}"
        if kind is EventType.STATE_CHANGED:
            source, target = _state(payload.get("from_state")), _state(payload.get("to_state"))
            facts.update(from_state=source, to_state=target)
            self.state = target or self.state
            return f"{payload.get('from_state')} -> {payload.get('to_state')}"
        if kind is EventType.MODEL_RESPONDED:
            return self._model_responded(payload, facts)
        if kind is EventType.MODEL_FAILED:
            error = str(payload.get("error") or payload.get("message") or "")
            facts["error"] = error or None
            kind_name = payload.get("error_type", "error")
            count = payload.get("consecutive_errors")
            streak = f" (consecutive errors: {count})" if count is not None else ""
            retry_in = _number(payload.get("retry_in_seconds"))
            if retry_in is not None:
                attempt, most = payload.get("attempt"), payload.get("max_attempts")
                streak += f", retrying in {retry_in:g}s (attempt {attempt}/{most})"
            return f"{kind_name}: {_whole(error)}{streak}"
        if kind.name.startswith("TOOL_"):
            return self._tool(kind, payload, facts)
        if kind is EventType.POLICY_TRIGGERED:
            policy = payload.get("policy")
            facts["policy"] = str(policy) if policy is not None else None
            return f"policy {policy} -> {payload.get('stop_reason')}"
        if kind is EventType.CHECKPOINT_CREATED:
            checkpoint = str(payload.get("checkpoint_id", "?"))[:8]
            state, next_step = payload.get("state"), payload.get("next_step")
            return f"checkpoint {checkpoint} at {state}, next step {next_step}"
        if kind is EventType.HOOK_FAILED:
            facts["error"] = str(payload.get("error") or "") or None
            error_type = payload.get("error_type")
            raised = f"{error_type}: {payload.get('error')}" if error_type else payload.get("error")
            plugin = f" of plugin {payload.get('plugin')}" if payload.get("plugin") else ""
            return (
                f"hook {payload.get('hook')}{plugin} at {payload.get('event')} raised "
                f"{_preview(raised)} -> {payload.get('outcome')}"
            )
        if kind in _CONTEXT_EVENTS:
            return _context_summary(kind, payload)
        if kind is EventType.RUN_RESUMED:
            checkpoint = str(payload.get("checkpoint_id", "?"))[:8]
            return f"resumed from checkpoint {checkpoint} at {payload.get('state')}"
        if kind in TERMINAL_EVENT_TYPES:
            self.terminal = payload
            failure = payload.get("error")
            facts["error"] = str(failure) if failure else None
            outcome = f"{payload.get('state')} ({payload.get('stop_reason')})"
            if failure:
                return f"{outcome}: {_whole(failure)}"
            output = payload.get("output")
            return f"{outcome}: {_preview(output)}" if output is not None else outcome
        return ", ".join(f"{key}={_preview(value, 24)}" for key, value in payload.items())

    def _model_responded(self, payload: Mapping[str, Any], facts: dict[str, Any]) -> str:
        facts["duration_ms"] = _number(payload.get("duration_ms"))
        step = _number(payload.get("step"))
        if step is not None:
            self.steps = max(self.steps, int(step))
        response = _mapping(payload.get("response"))
        usage = _usage(payload.get("usage")) or _usage(response.get("usage"))
        if usage is not None:
            self.usage = self.usage.plus(usage)
        if payload.get("token_accounting_available") is False or usage is None:
            self.accounting = False
        raw_calls = response.get("tool_calls")
        calls = [_mapping(c) for c in raw_calls] if isinstance(raw_calls, list) else []
        if not calls and response.get("tool_call"):  # a log written before parallel calls
            calls = [_mapping(response.get("tool_call"))]
        finish = response.get("finish_reason")
        if calls:
            shown = ", ".join(
                f"{c.get('name')}({_preview(c.get('arguments', {}), 40)})" for c in calls[:3]
            )
            more = f" and {len(calls) - 3} more" if len(calls) > 3 else ""
            label = "tool call" if len(calls) == 1 else f"{len(calls)} tool calls"
            decision = f"{label} {shown}{more}"
        else:
            decision = f"answer: {_preview(response.get('content', ''))}"
            if finish not in (None, "stop"):
                decision += f" (finish_reason={finish})"
        tokens = f" [{usage.input_tokens}/{usage.output_tokens} tok]" if usage else ""
        return f"step {step if step is None else int(step)}: {decision}{tokens}"

    def _tool(self, kind: EventType, payload: Mapping[str, Any], facts: dict[str, Any]) -> str:
        name, call_id, result = _tool_fields(payload)
        label = f"{name} [{call_id}]"
        if kind in (EventType.TOOL_COMPLETED, EventType.TOOL_FAILED):
            duration = payload.get("duration_ms", result.get("duration_ms"))
            facts["duration_ms"] = _number(duration)
            if kind is EventType.TOOL_FAILED:
                error = str(payload.get("error") or result.get("error") or "")
                facts["error"] = error or None
                return f"{label} failed: {_whole(error)}"
            output = payload.get("output", result.get("output"))
            return f"{label} -> {_preview(output)}"
        if kind is EventType.TOOL_DENIED:
            by = payload.get("blocked_by", "approval")
            return f"{label} denied by {by}: {_preview(payload.get('reason', ''))}"
        if kind is EventType.TOOL_PROGRESS:
            done, total = payload.get("progress"), payload.get("total")
            note = payload.get("message")
            amount = f"{done:g}" if isinstance(done, int | float) else "?"
            amount += f"/{total:g}" if isinstance(total, int | float) else ""
            return f"{label} progress {amount}" + (f" {_preview(note, 60)}" if note else "")
        return label


_CONTEXT_EVENTS = frozenset(
    {EventType.REQUEST_SHAPED, EventType.CONTEXT_COMPACTED, EventType.RUN_STEERED}
)


def _context_summary(kind: EventType, payload: Mapping[str, Any]) -> str:
    """One line for a request-seam event (see docs/context.md)."""
    if kind is EventType.RUN_STEERED:
        return f"steered ({payload.get('source')}): {_preview(payload.get('message'))}"
    if kind is EventType.CONTEXT_COMPACTED:
        stage = payload.get("stage")
        detail = ""
        if isinstance(payload.get("elided"), list):
            detail = f", {len(payload['elided'])} outputs elided"
        summary = _mapping(payload.get("summary"))
        if summary:
            detail = f", summary: {_preview(summary.get('text'), 40)}"
        return (
            f"{payload.get('shaper')} {stage}: {payload.get('tokens_before')} -> "
            f"{payload.get('tokens_after')} tokens (window {payload.get('window')}){detail}"
        )
    shapers = payload.get("shapers")
    names = [
        str(e.get("name"))
        for e in (shapers if isinstance(shapers, list) else [])
        if isinstance(e, Mapping) and e.get("changed")
    ]
    window = _mapping(payload.get("window"))
    limit = f" of {window.get('tokens')} ({window.get('source')})" if window else ""
    return (
        f"request shaped by {', '.join(names) or '-'}: {payload.get('messages_in')} -> "
        f"{payload.get('messages_out')} messages, ~{payload.get('estimated_tokens')} tokens{limit}"
    )


__all__ = ["RunTrace", "TraceEntry", "TraceInspector"]
