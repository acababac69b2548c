"""``avo runs diff``: a structural diff of two runs (states, tool calls, outputs, tokens)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from avo.events import EventType
from avo.exceptions import RunNotFoundError


@dataclass(frozen=True)
class ToolCallFacts:
    """One tool call of a run, as its events recorded it."""

    name: str
    arguments: Any
    outcome: str  # "ok", "failed", "denied" or "no result"
    output: Any = None

    def label(self) -> str:
        """``name {arguments} -> outcome``."""
        arguments = json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)
        shown = self.outcome if self.outcome != "ok" else _short(json.dumps(self.output))
        return f"{self.name} {_short(arguments)} -> {shown}"


@dataclass(frozen=True)
class RunFacts:
    """What a diff compares of one run."""

    run_id: str
    fields: dict[str, Any]
    states: list[str]
    tool_calls: list[ToolCallFacts]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (:meth:`from_dict` reads it back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunFacts:
        """Facts saved with :meth:`to_dict` (e.g. in a report from another machine)."""
        return cls(
            run_id=str(data["run_id"]),
            fields=dict(data["fields"]),
            states=[str(state) for state in data["states"]],
            tool_calls=[ToolCallFacts(**call) for call in data["tool_calls"]],
        )


@dataclass(frozen=True)
class RunDiff:
    """The differences between two runs."""

    a: RunFacts
    b: RunFacts
    differing_fields: list[str] = field(default_factory=list)
    first_state_difference: int | None = None
    first_tool_call_difference: int | None = None

    @property
    def same(self) -> bool:
        """True when no compared fact differs."""
        return (
            not self.differing_fields
            and self.first_state_difference is None
            and self.first_tool_call_difference is None
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "run_a": self.a.run_id,
            "run_b": self.b.run_id,
            "same": self.same,
            "fields": {
                name: {
                    "a": self.a.fields[name],
                    "b": self.b.fields[name],
                    "same": name not in self.differing_fields,
                }
                for name in self.a.fields
            },
            "states": {
                "a": self.a.states,
                "b": self.b.states,
                "first_difference": self.first_state_difference,
            },
            "tool_calls": {
                "a": [asdict(call) for call in self.a.tool_calls],
                "b": [asdict(call) for call in self.b.tool_calls],
                "first_difference": self.first_tool_call_difference,
            },
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False)

    def to_text(self) -> str:
        """A side-by-side table; ``*`` marks what differs."""
        what = []
        if self.differing_fields:
            what.append(", ".join(self.differing_fields))
        if self.first_state_difference is not None:
            what.append("states")
        if self.first_tool_call_difference is not None:
            what.append("tool calls")
        verdict = "identical" if self.same else "differ in " + "; ".join(what)
        lines = [f"runs {self.a.run_id} and {self.b.run_id}: {verdict}", ""]
        width = max(len(_cell(v)) for v in [*self.a.fields.values(), "RUN A"])
        lines.append(f"    {'':14}  {'RUN A':<{width}}  RUN B")
        for name, value in self.a.fields.items():
            mark = "*" if name in self.differing_fields else " "
            other = self.b.fields[name]
            lines.append(f"  {mark} {name:14}  {_cell(value):<{width}}  {_cell(other)}")
        lines.append("")
        lines.append(
            _sequence_line("states", self.a.states, self.b.states, self.first_state_difference)
        )
        lines.append(
            _sequence_line(
                "tool calls", self.a.tool_calls, self.b.tool_calls, self.first_tool_call_difference
            )
        )
        count = max(len(self.a.tool_calls), len(self.b.tool_calls))
        for index in range(count):
            left = _label(self.a.tool_calls, index)
            right = _label(self.b.tool_calls, index)
            mark = "*" if left != right else " "
            lines.append(f"  {mark} {index + 1:>3}  A: {left}")
            lines.append(f"         B: {right}")
        return "\n".join(lines).rstrip()


def _label(calls: list[ToolCallFacts], index: int) -> str:
    return calls[index].label() if index < len(calls) else "(none)"


def _sequence_line(name: str, a: list[Any], b: list[Any], first: int | None) -> str:
    if first is None:
        return f"  {name}: identical ({len(a)})"
    left = a[first] if first < len(a) else "(end)"
    right = b[first] if first < len(b) else "(end)"
    if isinstance(left, ToolCallFacts):
        left = left.label()
    if isinstance(right, ToolCallFacts):
        right = right.label()
    return (
        f"* {name}: first difference at #{first + 1}: {left} vs {right} "
        f"(A has {len(a)}, B has {len(b)})"
    )


def _cell(value: Any) -> str:
    return "-" if value is None else _short(str(value))


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _first_difference(a: list[Any], b: list[Any]) -> int | None:
    for index, (left, right) in enumerate(zip(a, b, strict=False)):
        if left != right:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


async def run_facts(store: Any, run_id: str) -> RunFacts:
    """Collect the compared facts of ``run_id`` from its trace and run record."""
    from avo.tracing import TraceInspector

    trace = await TraceInspector(store).inspect(run_id)
    record = await store.get_run(run_id)
    if record is None:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    states: list[str] = []
    calls: dict[str, dict[str, Any]] = {}
    for entry in trace.entries:
        payload = entry.payload
        if entry.to_state is not None:
            states.append(entry.to_state.value)
        call_id = payload.get("tool_call_id")
        if entry.event_type is EventType.TOOL_STARTED and isinstance(call_id, str):
            calls[call_id] = {
                "name": str(payload.get("name", "?")),
                "arguments": payload.get("arguments", {}),
                "outcome": "no result",
            }
        elif entry.event_type is EventType.TOOL_COMPLETED and call_id in calls:
            result = payload.get("result")
            output = result.get("output") if isinstance(result, dict) else payload.get("output")
            calls[str(call_id)].update(outcome="ok", output=output)
        elif entry.event_type is EventType.TOOL_FAILED and call_id in calls:
            calls[str(call_id)]["outcome"] = "failed"
        elif entry.event_type is EventType.TOOL_DENIED:
            calls[str(call_id or len(calls))] = {
                "name": str(payload.get("name", "?")),
                "arguments": payload.get("arguments", {}),
                "outcome": "denied",
            }
    usage = trace.token_usage
    fields = {
        "status": trace.final_state.value if trace.final_state else record.state.value,
        "stop_reason": trace.stop_reason.value if trace.stop_reason else None,
        "steps": trace.steps or record.steps,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "output": record.output,
        "error": record.error,
    }
    return RunFacts(run_id, fields, states, [ToolCallFacts(**call) for call in calls.values()])


def diff_facts(a: RunFacts, b: RunFacts) -> RunDiff:
    """The structural diff of two runs' facts (which may come from two stores)."""
    return RunDiff(
        a=a,
        b=b,
        differing_fields=[name for name in a.fields if a.fields[name] != b.fields[name]],
        first_state_difference=_first_difference(a.states, b.states),
        first_tool_call_difference=_first_difference(a.tool_calls, b.tool_calls),
    )


async def diff_runs(store: Any, run_a: str, run_b: str) -> RunDiff:
    """The structural diff of two stored runs."""
    return diff_facts(await run_facts(store, run_a), await run_facts(store, run_b))


__all__ = ["RunDiff", "RunFacts", "ToolCallFacts", "diff_facts", "diff_runs", "run_facts"]
