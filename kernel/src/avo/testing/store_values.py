"""Event, run and checkpoint builders for store tests (used by the conformance suite).

Each builds a valid value with fixed timestamps, so stores can be compared
round-trip; ``start_run`` / ``finish_run`` drive a run through a store.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from avo.events import AgentEvent, EventType
from avo.models import Checkpoint, ModelResponse, RunRecord, TokenUsage, ToolCall, new_id
from avo.state import RunState, StopReason
from avo.storage.base import EventStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
"""The fixed instant the builders stamp values with."""

# ---------------------------------------------------------------- event builders


def run_record(run_id: str, *, state: RunState = RunState.CREATED, **fields: Any) -> RunRecord:
    """A RunRecord for ``run_id`` (created at a fixed instant unless given)."""
    fields.setdefault("created_at", T0)
    fields.setdefault("updated_at", fields["created_at"])
    return RunRecord(run_id=run_id, task="conformance task", state=state, **fields)


def event(run_id: str, kind: EventType, **payload: Any) -> AgentEvent:
    """An event of ``kind`` with ``payload``."""
    return AgentEvent(run_id=run_id, event_type=kind, payload=payload)


def created(run_id: str) -> AgentEvent:
    """The RUN_CREATED event."""
    return event(run_id, EventType.RUN_CREATED, task="conformance task", policy={})


def moved(run_id: str, source: RunState, target: RunState) -> AgentEvent:
    """A STATE_CHANGED event."""
    return event(run_id, EventType.STATE_CHANGED, from_state=source.value, to_state=target.value)


def responded(run_id: str, step: int = 1) -> AgentEvent:
    """A MODEL_RESPONDED event with a final answer."""
    response = ModelResponse(content="done")
    return event(
        run_id,
        EventType.MODEL_RESPONDED,
        step=step,
        response=response.model_dump(mode="json"),
        duration_ms=1.0,
        token_accounting_available=True,
    )


def terminal(run_id: str, state: RunState, reason: StopReason) -> AgentEvent:
    """The terminal event for ``state``/``reason``."""
    kinds = {
        RunState.COMPLETED: EventType.RUN_COMPLETED,
        RunState.FAILED: EventType.RUN_FAILED,
        RunState.STOPPED: EventType.RUN_STOPPED,
        RunState.CANCELLED: EventType.RUN_CANCELLED,
    }
    return event(
        run_id,
        kinds[state],
        state=state.value,
        stop_reason=reason.value,
        output="done" if state is RunState.COMPLETED else None,
        error=None,
        steps=1,
        token_usage={"input_tokens": 0, "output_tokens": 0},
        token_accounting_available=True,
    )


def checkpoint(
    run_id: str,
    *,
    messages: list[dict[str, Any]] | None = None,
    state: RunState = RunState.DECISION_RECEIVED,
    next_step: int = 2,
    completed: set[str] | None = None,
    fingerprints: list[str] | None = None,
    script: list[Any] | None = None,
) -> Checkpoint:
    """A Checkpoint with every field set to something non-trivial."""
    return Checkpoint(
        run_id=run_id,
        created_at=T0 + timedelta(seconds=next_step),
        state=state,
        messages=messages if messages is not None else [{"role": "user", "content": "hi"}],
        next_step=next_step,
        token_usage=TokenUsage(input_tokens=3 * next_step, output_tokens=next_step),
        token_accounting_available=True,
        consecutive_errors=1,
        repeated_action_history=list(fingerprints or []),
        observation_fingerprints=[f"obs-{i}" for i in range(next_step)],
        model_response_fingerprints=list(reversed(fingerprints or [])),
        progress_markers=["m"],
        completed_tool_call_ids=set(completed or set()),
        user_state={"k": [1, 2, {"ü": None}]},
        policy={"max_steps": 50, "nested": {"x": 1.5}},
        provider_metadata={"provider_type": "fake", "cursor": next_step, "script": script or []},
        pending_response=ModelResponse(
            tool_call=ToolCall(tool_call_id=f"call-{next_step}", name="echo", arguments={"n": 1})
        ),
    )


def checkpointed(run_id: str, cp: Checkpoint) -> AgentEvent:
    """The CHECKPOINT_CREATED event for ``cp``."""
    return event(
        run_id,
        EventType.CHECKPOINT_CREATED,
        checkpoint_id=cp.checkpoint_id,
        state=cp.state.value,
        next_step=cp.next_step,
    )


async def start_run(store: EventStore, run_id: str | None = None, **fields: Any) -> str:
    """Create a run and move it to DECISION_RECEIVED with one model response."""
    run_id = run_id or new_id()
    await store.create_run(run_record(run_id, **fields), created(run_id))
    await store.append_event(moved(run_id, RunState.CREATED, RunState.MODEL_PENDING))
    await store.append_event(responded(run_id))
    await store.append_event(moved(run_id, RunState.MODEL_PENDING, RunState.DECISION_RECEIVED))
    return run_id


async def finish_run(store: EventStore, run_id: str) -> tuple[AgentEvent, AgentEvent]:
    """Finalize a started run as COMPLETED."""
    run = await store.get_run(run_id)
    assert run is not None
    done = run.model_copy(
        update={"state": RunState.COMPLETED, "stop_reason": StopReason.COMPLETED, "output": "done"}
    )
    return await store.finalize_run(
        done,
        moved(run_id, RunState.DECISION_RECEIVED, RunState.COMPLETED),
        terminal(run_id, RunState.COMPLETED, StopReason.COMPLETED),
    )


__all__ = [
    "T0",
    "checkpoint",
    "checkpointed",
    "created",
    "event",
    "finish_run",
    "moved",
    "responded",
    "run_record",
    "start_run",
    "terminal",
]
