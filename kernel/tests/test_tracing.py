"""TraceInspector / RunTrace: traces built only from a run's events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from avo.events import AgentEvent, EventType
from avo.exceptions import RunNotFoundError
from avo.models import ModelResponse, RunRecord, TokenUsage, ToolCall
from avo.state import RunState, StopReason
from avo.storage.memory import InMemoryEventStore
from avo.tracing import RunTrace, TraceEntry, TraceInspector

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class LogWriter:
    """Writes a plausible tool-calling run through the real in-memory store."""

    def __init__(self, store: InMemoryEventStore, run_id: str = "run-1") -> None:
        self.store = store
        self.run_id = run_id
        self.tick = 0
        self.state = RunState.CREATED

    def event(self, kind: EventType, **payload: Any) -> AgentEvent:
        self.tick += 1
        return AgentEvent(
            run_id=self.run_id,
            event_type=kind,
            created_at=T0 + timedelta(milliseconds=250 * self.tick),
            payload=payload,
        )

    async def create(self, task: str = "find the bug") -> None:
        run = RunRecord(run_id=self.run_id, task=task)
        await self.store.create_run(run, self.event(EventType.RUN_CREATED, task=task, policy={}))

    async def append(self, kind: EventType, **payload: Any) -> None:
        await self.store.append_event(self.event(kind, **payload))

    async def move(self, target: RunState) -> None:
        await self.append(
            EventType.STATE_CHANGED, from_state=self.state.value, to_state=target.value
        )
        self.state = target

    async def responded(self, step: int, response: ModelResponse, ms: float = 12.5) -> None:
        usage = response.usage.model_dump() if response.usage else None
        await self.append(
            EventType.MODEL_RESPONDED,
            step=step,
            response=response.model_dump(mode="json"),
            duration_ms=ms,
            token_accounting_available=response.usage is not None,
            usage=usage,
        )

    async def finish(
        self,
        state: RunState,
        reason: StopReason,
        *,
        output: str | None = None,
        error: str | None = None,
        steps: int = 2,
        usage: TokenUsage | None = None,
        accounting: bool = True,
    ) -> None:
        kind = {
            RunState.COMPLETED: EventType.RUN_COMPLETED,
            RunState.STOPPED: EventType.RUN_STOPPED,
            RunState.FAILED: EventType.RUN_FAILED,
            RunState.CANCELLED: EventType.RUN_CANCELLED,
        }[state]
        run = RunRecord(
            run_id=self.run_id, task="find the bug", state=state, stop_reason=reason, steps=steps
        )
        state_event = self.event(
            EventType.STATE_CHANGED, from_state=self.state.value, to_state=state.value
        )
        terminal = self.event(
            kind,
            state=state.value,
            stop_reason=reason.value,
            output=output,
            error=error,
            steps=steps,
            token_usage=(usage or TokenUsage()).model_dump(),
            token_accounting_available=accounting,
        )
        await self.store.finalize_run(run, state_event, terminal)


async def write_tool_run(store: InMemoryEventStore) -> None:
    log = LogWriter(store)
    await log.create()
    await log.move(RunState.MODEL_PENDING)
    call = ToolCall(tool_call_id="call-0001-abcdef", name="grep", arguments={"pattern": "TODO"})
    await log.responded(
        1, ModelResponse(tool_call=call, usage=TokenUsage(input_tokens=100, output_tokens=20))
    )
    await log.move(RunState.DECISION_RECEIVED)
    await log.append(
        EventType.CHECKPOINT_CREATED, checkpoint_id="ckpt-1234567", state="x", next_step=2
    )
    await log.move(RunState.TOOL_PENDING)
    await log.append(
        EventType.TOOL_APPROVAL_REQUESTED,
        tool_call_id=call.tool_call_id,
        idempotency_key="k",
        name="grep",
        mode="v0.1_callback",
    )
    await log.move(RunState.APPROVAL_PENDING)
    await log.append(EventType.TOOL_APPROVED, tool_call_id=call.tool_call_id, name="grep")
    await log.move(RunState.TOOL_EXECUTING)
    await log.append(EventType.TOOL_STARTED, tool_call_id=call.tool_call_id, name="grep")
    await log.append(
        EventType.TOOL_COMPLETED,
        tool_call_id=call.tool_call_id,
        name="grep",
        output="a.py:3: TODO fix",
        duration_ms=4.0,
    )
    await log.move(RunState.OBSERVATION_RECORDED)
    await log.move(RunState.MODEL_PENDING)
    await log.responded(
        2,
        ModelResponse(
            content="Found it in a.py", usage=TokenUsage(input_tokens=150, output_tokens=30)
        ),
    )
    await log.move(RunState.DECISION_RECEIVED)
    await log.finish(
        RunState.COMPLETED,
        StopReason.COMPLETED,
        output="Found it in a.py",
        usage=TokenUsage(input_tokens=250, output_tokens=50),
    )


async def test_inspect_completed_tool_run() -> None:
    store = InMemoryEventStore()
    await write_tool_run(store)
    trace = await TraceInspector(store).inspect("run-1")

    assert isinstance(trace, RunTrace)
    assert trace.run_id == "run-1"
    assert trace.final_state is RunState.COMPLETED
    assert trace.stop_reason is StopReason.COMPLETED
    assert trace.steps == 2
    assert trace.token_usage == TokenUsage(input_tokens=250, output_tokens=50)
    assert trace.token_accounting_available is True
    events = await store.get_events("run-1")
    assert [entry.sequence for entry in trace.entries] == [event.sequence for event in events]
    assert [entry.event_type for entry in trace.entries] == [e.event_type for e in events]
    assert trace.duration_seconds == pytest.approx(
        (events[-1].created_at - events[0].created_at).total_seconds()
    )

    by_type = {entry.event_type: entry for entry in trace.entries}
    change = trace.entries[1]
    assert (change.from_state, change.to_state) == (RunState.CREATED, RunState.MODEL_PENDING)
    assert change.summary == "created -> model_pending"
    responded = by_type[EventType.MODEL_RESPONDED]
    assert responded.duration_ms == 12.5
    assert "tool call grep" in trace.entries[2].summary
    completed = by_type[EventType.TOOL_COMPLETED]
    assert completed.duration_ms == 4.0
    assert "grep [call-000]" in completed.summary
    assert "TODO fix" in completed.summary
    assert completed.payload["output"] == "a.py:3: TODO fix"
    terminal = trace.entries[-1]
    assert terminal.event_type is EventType.RUN_COMPLETED
    assert terminal.error is None
    assert "Found it in a.py" in terminal.summary


async def test_to_text_has_header_and_aligned_rows() -> None:
    store = InMemoryEventStore()
    await write_tool_run(store)
    trace = await TraceInspector(store).inspect("run-1")
    text = trace.to_text()
    lines = text.splitlines()
    assert lines[0] == "Run run-1"
    assert "final state: completed" in lines[1]
    assert "stop reason: completed" in lines[1]
    assert "steps: 2" in lines[2]
    assert f"events: {len(trace.entries)}" in lines[2]
    assert "duration: " in lines[2]
    assert "250 in / 50 out (300 total)" in lines[3]
    rows = lines[5:]
    assert rows[0].split() == ["seq", "time", "event", "details"]
    assert len(rows) == len(trace.entries) + 1
    # Every row starts its details at the same column.
    detail_columns = {
        row.index(entry.summary) for row, entry in zip(rows[1:], trace.entries, strict=True)
    }
    assert len(detail_columns) == 1
    event_columns = {
        row.index(entry.event_type.value)
        for row, entry in zip(rows[1:], trace.entries, strict=True)
    }
    assert len(event_columns) == 1
    assert "+0.000s" in rows[1]
    assert "tool_completed" in text


async def test_stopped_run_with_policy_and_failed_tool() -> None:
    store = InMemoryEventStore()
    log = LogWriter(store, run_id="run-2")
    await log.create()
    await log.move(RunState.MODEL_PENDING)
    await log.append(
        EventType.MODEL_FAILED, error_type="ProviderError", error="503", consecutive_errors=1
    )
    call = ToolCall(tool_call_id="c2", name="run_tests")
    await log.responded(1, ModelResponse(tool_call=call))
    await log.move(RunState.DECISION_RECEIVED)
    await log.move(RunState.TOOL_PENDING)
    await log.move(RunState.APPROVAL_PENDING)
    await log.move(RunState.TOOL_EXECUTING)
    await log.append(EventType.TOOL_STARTED, tool_call_id="c2", name="run_tests")
    await log.append(
        EventType.TOOL_FAILED,
        tool_call_id="c2",
        result={"tool_name": "run_tests", "error": "exit 1", "duration_ms": 9.5},
    )
    await log.append(
        EventType.POLICY_TRIGGERED,
        policy="consecutive_errors",
        stop_reason="consecutive_errors",
        state="tool_executing",
        steps=1,
        elapsed_seconds=1.0,
    )
    await log.finish(
        RunState.STOPPED,
        StopReason.CONSECUTIVE_ERRORS,
        error="too many errors",
        steps=1,
        accounting=False,
    )
    trace = await TraceInspector(store).inspect("run-2")
    assert trace.final_state is RunState.STOPPED
    assert trace.stop_reason is StopReason.CONSECUTIVE_ERRORS
    assert trace.token_accounting_available is False
    failed_model = next(e for e in trace.entries if e.event_type is EventType.MODEL_FAILED)
    assert failed_model.error == "503"
    assert "consecutive errors: 1" in failed_model.summary
    failed_tool = next(e for e in trace.entries if e.event_type is EventType.TOOL_FAILED)
    assert failed_tool.error == "exit 1"
    assert failed_tool.duration_ms == 9.5
    assert "run_tests" in failed_tool.summary
    policy = next(e for e in trace.entries if e.event_type is EventType.POLICY_TRIGGERED)
    assert policy.policy == "consecutive_errors"
    assert trace.entries[-1].error == "too many errors"
    text = trace.to_text()
    assert "stop reason: consecutive_errors" in text
    assert "incomplete" in text


async def test_run_in_flight_folds_model_usage() -> None:
    store = InMemoryEventStore()
    log = LogWriter(store, run_id="live")
    await log.create()
    await log.move(RunState.MODEL_PENDING)
    await log.responded(
        1,
        ModelResponse(
            tool_call=ToolCall(name="a"), usage=TokenUsage(input_tokens=5, output_tokens=1)
        ),
    )
    await log.move(RunState.DECISION_RECEIVED)
    trace = await TraceInspector(store).inspect("live")
    assert trace.final_state is RunState.DECISION_RECEIVED
    assert trace.stop_reason is None
    assert trace.steps == 1
    assert trace.token_usage == TokenUsage(input_tokens=5, output_tokens=1)
    assert trace.token_accounting_available is True
    assert "stop reason: -" in trace.to_text()


async def test_unknown_run_is_refused() -> None:
    store = InMemoryEventStore()
    with pytest.raises(RunNotFoundError, match="'nope'") as info:
        await TraceInspector(store).inspect("nope")
    assert info.value.run_id == "nope"


def test_from_events_sorts_and_refuses_bad_input() -> None:
    events = [
        AgentEvent(
            run_id="r",
            sequence=2,
            event_type=EventType.STATE_CHANGED,
            created_at=T0,
            payload={"from_state": "created", "to_state": "model_pending"},
        ),
        AgentEvent(
            run_id="r",
            sequence=1,
            event_type=EventType.RUN_CREATED,
            created_at=T0,
            payload={"task": "t", "policy": {}},
        ),
    ]
    trace = TraceInspector.from_events(events)
    assert [e.sequence for e in trace.entries] == [1, 2]
    assert trace.final_state is RunState.MODEL_PENDING
    assert trace.duration_seconds == 0
    with pytest.raises(RunNotFoundError):
        TraceInspector.from_events([])
    other = AgentEvent(run_id="s", sequence=3, event_type=EventType.RUN_CREATED, created_at=T0)
    with pytest.raises(ValueError, match="'r' and 's'"):
        TraceInspector.from_events([*events, other])


def test_unsaved_events_get_positional_sequences() -> None:
    events = [
        AgentEvent(
            run_id="r", event_type=EventType.RUN_CREATED, created_at=T0, payload={"task": "t"}
        )
    ]
    assert TraceInspector.from_events(events).entries[0].sequence == 1


def test_trace_entry_refuses_sequence_zero() -> None:
    with pytest.raises(ValueError, match="got 0"):
        TraceEntry(sequence=0, created_at=T0, event_type=EventType.RUN_CREATED, summary="")


def test_empty_trace_text() -> None:
    trace = RunTrace(
        run_id="x",
        entries=[],
        final_state=None,
        stop_reason=None,
        steps=0,
        duration_seconds=None,
        token_usage=TokenUsage(),
        token_accounting_available=True,
    )
    text = trace.to_text()
    assert "final state: unknown" in text
    assert "duration: -" in text


async def test_trace_of_a_real_runtime_run_agrees_with_its_result() -> None:
    from pydantic import BaseModel

    from avo.policies import LoopPolicy
    from avo.providers.fake import FakeProvider
    from avo.runtime import AgentRuntime
    from avo.tools import FunctionTool

    class EchoArgs(BaseModel):
        n: int

    async def echo(args: EchoArgs) -> str:
        return f"echo {args.n}"

    tool = FunctionTool(name="echo", description="Echo n", arguments_model=EchoArgs, function=echo)
    provider = FakeProvider(
        [
            ModelResponse(
                tool_call=ToolCall(name="echo", arguments={"n": 7}),
                usage=TokenUsage(input_tokens=10, output_tokens=2),
            ),
            ModelResponse(content="echoed", usage=TokenUsage(input_tokens=20, output_tokens=3)),
        ]
    )
    runtime = AgentRuntime(provider=provider, tools=[tool], policy=LoopPolicy(max_steps=5))
    result = await runtime.run("echo seven")
    trace = await runtime.inspect(result.run_id)
    assert trace.final_state is result.status
    assert trace.stop_reason is result.stop_reason
    assert trace.steps == result.steps
    assert trace.token_usage == result.token_usage
    assert trace.token_accounting_available is result.token_accounting_available
    completed = next(e for e in trace.entries if e.event_type is EventType.TOOL_COMPLETED)
    assert "echo" in completed.summary
    assert "echo 7" in completed.summary
    text = trace.to_text()
    assert f"Run {result.run_id}" in text
    assert "30 in / 5 out (35 total)" in text
