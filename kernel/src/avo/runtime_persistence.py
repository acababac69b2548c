"""Event append, transition, checkpoint, terminate helpers.

Every write goes through here: the kernel validates each event against the
run's :class:`~avo.events.RunLogState` *before* the store sees it, so a store
plugin cannot skip the event invariants, then folds the stored event back in.
"""

from __future__ import annotations

import logging
import operator
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from avo._dump import tool_result_json, usage_json
from avo._run_context import _RunContext
from avo._transcript import close_batch
from avo.events import TERMINAL_EVENT_FOR_STATE, AgentEvent, EventType, validate_event_append
from avo.exceptions import StorageError, UnsafeResumeError
from avo.models import (
    Checkpoint,
    RunRecord,
    RunResult,
    ToolResult,
    replaced,
    trusted,
)
from avo.runtime_plugins import call_plugins
from avo.state import (
    STATE_VALUE,
    RunState,
    StopReason,
    validate_terminal_outcome,
    validate_transition,
)
from avo.storage.batch import ValidatedBatch

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime
    from avo.storage.base import EventStore

logger = logging.getLogger("avo.runtime")


_KERNEL_ONLY_PAYLOADS = frozenset({EventType.STATE_CHANGED, EventType.CHECKPOINT_CREATED})
"""Events whose payloads hold only kernel-made values (states, ids, counters): no secrets."""


def _event(
    rt: AgentRuntime,
    ctx: _RunContext,
    kind: EventType,
    payload: dict[str, Any],
    offset: int = 1,
    *,
    redact: bool = True,
) -> AgentEvent:
    # Built from already-validated values: skip re-validating the payload. The
    # sequence is the one the store will assign, so a store can keep the object.
    # ``redact=False``: the payload is made of kernel values or already redacted.
    if redact and kind not in _KERNEL_ONLY_PAYLOADS:
        payload = rt.redactor.value(payload)
    return trusted(
        AgentEvent,
        {
            "event_id": rt.event_ids(),
            "run_id": ctx.run_id,
            "sequence": ctx.log.last_sequence + offset,
            "event_type": kind,
            "created_at": rt.clock(),
            "payload": payload,
            "parent_event_id": None,
        },
    )


_first = operator.itemgetter(0)


def notify_appended(rt: AgentRuntime, event: AgentEvent, ctx: _RunContext | None = None) -> None:
    """Tell observer plugins about a stored event; one that raises is reported, not fatal."""
    plugins = rt._plugins
    if plugins is None:
        return
    call_plugins(rt, "avo_event_appended", ctx=ctx, event=event)


# -- the write buffer -----------------------------------------------------------
#
# Events are validated and folded into ``ctx.log`` the moment the run makes them,
# but written at the next durable boundary, in one store call when the store
# offers ``append_batch`` (see avo.storage.base.BatchEventStore). ``flush`` is
# called before anything outside the kernel is awaited — the provider, a tool,
# a hook, a non-default approval callback — and before the run ends, so every
# event that precedes an effect is durable before that effect can happen.


def _queue(ctx: _RunContext, event: AgentEvent, cp: Checkpoint | None = None) -> None:
    ctx.log.accept(event)
    ctx.pending.append((event, None, cp))


async def _replay(
    store: EventStore, event: AgentEvent, run: RunRecord | None, cp: Checkpoint | None
) -> AgentEvent:
    """Write one buffered event through the single-event methods (stores without batches)."""
    if cp is not None:
        return (await store.save_checkpoint(cp, event))[1]
    if run is not None:
        return (await store.append_event_and_update_run(event, run))[0]
    return await store.append_event(event)


async def flush(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Write the buffered events (and the run head, and a checkpoint) durably."""
    pending = ctx.pending
    if not pending:
        return
    ctx.pending = []
    checkpoint = ctx.pending_checkpoint
    ctx.pending_checkpoint = None
    ctx.head_private = False  # the store may keep the head object from here on
    try:
        if ctx.batch is not None:
            events = ValidatedBatch(map(_first, pending))  # each passed ctx.log.accept
            stored = await ctx.batch(ctx.run, events, checkpoint)
        else:
            store = rt.event_store
            stored = [await _replay(store, *op) for op in pending]
    except BaseException:
        ctx.unsynced = True
        raise
    if stored[-1].sequence != pending[-1][0].sequence:
        ctx.unsynced = True
        raise StorageError(
            f"run {ctx.run_id}: the store numbered event {stored[-1].event_type.value} "
            f"{stored[-1].sequence}, the runtime {pending[-1][0].sequence}: another writer "
            "appended to this run. Drive a run from one runtime at a time (take a lease: "
            "store.acquire_lease / store.fenced)."
        )
    if rt._plugins is not None:
        for event in stored:
            notify_appended(rt, event, ctx)


def append(
    rt: AgentRuntime,
    ctx: _RunContext,
    kind: EventType,
    payload: dict[str, Any],
    *,
    redact: bool = True,
) -> AgentEvent:
    """Validate one event and buffer it for the next flush."""
    event = _event(rt, ctx, kind, payload, redact=redact)
    _queue(ctx, event)
    return event


def append_with_run(
    rt: AgentRuntime,
    ctx: _RunContext,
    kind: EventType,
    payload: dict[str, Any],
    *,
    redact: bool = True,
    **run_updates: Any,
) -> AgentEvent:
    """Validate one event, update the run head with it, buffer both for the next flush."""
    event = _event(rt, ctx, kind, payload, redact=redact)
    ctx.log.accept(event)
    _advance_head(ctx, event, run_updates)
    return event


def _advance_head(ctx: _RunContext, event: AgentEvent, updates: dict[str, Any]) -> None:
    updates["updated_at"] = event.created_at
    if ctx.head_private:
        # Batching, and no one has seen this head object yet: update it in place.
        ctx.run.__dict__.update(updates)
        ctx.pending.append((event, None, None))
        return
    run = replaced(ctx.run, **updates)
    if ctx.batch is None:  # replayed one by one: each event keeps its own head
        ctx.pending.append((event, run, None))
    else:
        ctx.pending.append((event, None, None))
        ctx.head_private = True
    ctx.run = run


def transition(rt: AgentRuntime, ctx: _RunContext, target: RunState) -> None:
    """Move the run to ``target`` (STATE_CHANGED + run head)."""
    source = ctx.run.state
    validate_transition(source, target)
    append_with_run(
        rt,
        ctx,
        EventType.STATE_CHANGED,
        {"from_state": STATE_VALUE[source], "to_state": STATE_VALUE[target]},
        state=target,
    )


def provider_snapshot(rt: AgentRuntime) -> dict[str, JsonValue]:
    """The provider's resumable state (StatefulModelProvider) or just its type."""
    snapshot = getattr(rt.provider, "snapshot_state", None)
    if callable(snapshot):
        state = snapshot()
        if isinstance(state, dict):
            return state
    return {"provider_type": str(getattr(rt.provider, "name", type(rt.provider).__name__))}


def restore_provider(rt: AgentRuntime, run_id: str, state: dict[str, JsonValue]) -> None:
    """Restore a StatefulModelProvider; a mismatch is an UnsafeResumeError."""
    restore = getattr(rt.provider, "restore_state", None)
    if not callable(restore) or not state:
        return
    try:
        restore(state)
    except (ValueError, TypeError, KeyError) as exc:
        raise UnsafeResumeError(
            f"Cannot safely resume run {run_id!r}: the checkpointed provider state does not "
            f"match the provider passed to the runtime ({exc})",
            run_id=run_id,
        ) from exc


_NO_STATE: dict[str, JsonValue] = {}


def build_checkpoint(rt: AgentRuntime, ctx: _RunContext) -> Checkpoint:
    """A full checkpoint of ``ctx`` (built from validated values, not re-validated)."""
    detector = ctx.detector
    return trusted(
        Checkpoint,
        {
            "checkpoint_id": rt.event_ids(),
            "run_id": ctx.run_id,
            "created_at": rt.clock(),
            "state": ctx.state,
            "messages": ctx.transcript(),
            "next_step": ctx.next_step,
            "token_usage": ctx.run.token_usage,
            "token_accounting_available": ctx.run.token_accounting_available,
            "consecutive_errors": ctx.consecutive_errors,
            "repeated_action_history": list(detector.action_history),
            "observation_fingerprints": list(detector.observation_history),
            "model_response_fingerprints": list(detector.model_history),
            "progress_markers": list(detector.progress_markers),
            "completed_tool_call_ids": ctx.completed_ids(),
            "user_state": dict(ctx.run.user_state),
            "policy": ctx.policy_json,
            "provider_metadata": provider_snapshot(rt),
            "pending_response": ctx.pending_response,
            "last_event_sequence": ctx.log.last_sequence + 1,
            "shaper_state": _NO_STATE if ctx.seam is None else ctx.seam.state_json(),
            "partial_output": ctx.partial_output,
            "continuation_turns": ctx.continuation_turns,
            "output_retries": ctx.output_retries,
        },
    )


async def checkpoint(rt: AgentRuntime, ctx: _RunContext) -> Checkpoint:
    """Buffer a checkpoint and its CHECKPOINT_CREATED event (written atomically together)."""
    if ctx.pending_checkpoint is not None:
        await flush(rt, ctx)  # one checkpoint per batch
    cp = build_checkpoint(rt, ctx)
    event = _event(
        rt,
        ctx,
        EventType.CHECKPOINT_CREATED,
        {"checkpoint_id": cp.checkpoint_id, "state": cp.state.value, "next_step": cp.next_step},
    )
    _queue(ctx, event, cp)
    ctx.pending_checkpoint = cp
    return cp


async def record_tool_result(rt: AgentRuntime, ctx: _RunContext, result: ToolResult) -> None:
    """Append TOOL_COMPLETED / TOOL_FAILED (with the full result) and keep it for the batch.

    The call counts as completed at once (it never runs again); its message joins
    the transcript when the batch closes (``close_batch``), in the model's order.
    """
    output = result.output
    if type(output) is dict and output.get("type") == "content_blocks":
        from avo._media import store_tool_output  # media bytes go to the blob store first

        result = await store_tool_output(rt, ctx, result)
    # One redaction walk, over the result: the other fields are kernel values or
    # copies of the (redacted) result's.
    dumped = rt.redactor.value(tool_result_json(result))
    payload: dict[str, Any] = {
        "tool_call_id": result.tool_call_id,
        "name": dumped["tool_name"],
        "success": result.success,
        "duration_ms": result.duration_ms,
        "result": dumped,
    }
    if result.success:
        append(rt, ctx, EventType.TOOL_COMPLETED, payload, redact=False)
    else:
        payload["error"] = dumped["error"]
        append(rt, ctx, EventType.TOOL_FAILED, payload, redact=False)
    ctx.completed_tool_call_ids.add(result.tool_call_id)
    ctx.results[result.tool_call_id] = result


def elapsed_seconds(rt: AgentRuntime, ctx: _RunContext) -> float:
    """Seconds since this run (or resume) started driving, by the runtime's clock."""
    return (rt.clock() - ctx.started_at).total_seconds()


async def trigger_policy(
    rt: AgentRuntime,
    ctx: _RunContext,
    reason: StopReason,
    message: str,
    *,
    policy: str | None = None,
    output: str | None = None,
) -> None:
    """Record POLICY_TRIGGERED, then stop the run (STOPPED / ``reason``)."""
    append(
        rt,
        ctx,
        EventType.POLICY_TRIGGERED,
        {
            "policy": policy or reason.value,
            "stop_reason": reason.value,
            "state": ctx.state.value,
            "steps": ctx.run.steps,
            "elapsed_seconds": round(elapsed_seconds(rt, ctx), 6),
            "message": message,
        },
    )
    await terminate(rt, ctx, RunState.STOPPED, reason, output=output, error=message)


async def terminate(
    rt: AgentRuntime,
    ctx: _RunContext,
    state: RunState,
    reason: StopReason,
    *,
    output: str | None = None,
    error: str | None = None,
) -> None:
    """Checkpoint, then STATE_CHANGED + the terminal event + final head, atomically."""
    validate_terminal_outcome(state, reason)
    validate_transition(ctx.state, state)
    if ctx.calls:  # every call of an open batch gets its one result message
        close_batch(ctx, reason.value)
    await checkpoint(rt, ctx)
    await flush(rt, ctx)
    output = rt.redactor.text(output) if output else output
    error = rt.redactor.text(error) if error else error
    now = rt.clock()
    run = replaced(
        ctx.run,
        state=state,
        stop_reason=reason,
        output=output,
        error=error,
        updated_at=now,
        duration_seconds=max(0.0, (now - ctx.run.created_at).total_seconds()),
    )
    state_event = _event(
        rt, ctx, EventType.STATE_CHANGED, {"from_state": ctx.state.value, "to_state": state.value}
    )
    terminal_event = _event(
        rt,
        ctx,
        TERMINAL_EVENT_FOR_STATE[state],
        {
            "state": state.value,
            "stop_reason": reason.value,
            "output": output,
            "error": error,
            "steps": run.steps,
            "token_usage": usage_json(run.token_usage),
            "token_accounting_available": run.token_accounting_available,
        },
        offset=2,
    )
    scratch = ctx.log.copy()
    validate_event_append(scratch, state_event)
    scratch.apply(state_event)
    validate_event_append(scratch, terminal_event)
    stored_state, stored_terminal = await rt.event_store.finalize_run(
        run, state_event, terminal_event
    )
    ctx.log.apply(stored_state)
    ctx.log.apply(stored_terminal)
    ctx.run = run
    notify_appended(rt, stored_state, ctx)
    notify_appended(rt, stored_terminal, ctx)


def result_of(ctx: _RunContext) -> RunResult:
    """The RunResult for the run's current head."""
    run = ctx.run
    return RunResult(
        run_id=run.run_id,
        status=run.state,
        stop_reason=run.stop_reason,
        output=run.output,
        error=run.error,
        steps=run.steps,
        token_usage=run.token_usage,
        token_accounting_available=run.token_accounting_available,
        parsed=ctx.parsed,
    )
