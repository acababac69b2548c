"""Resuming a run: the checks that refuse it, its context from a checkpoint, and the
durable results after it.

Split from :mod:`avo.runtime` (the loop itself): ``AgentRuntime.resume`` drives
what :func:`resumed_context` prepares; ``avo.ops`` uses the pieces.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from avo._run_context import _RunContext
from avo._transcript import close_batch, tool_calls_message, trim_batch
from avo.approval import Answer
from avo.events import AgentEvent, EventType, RunLogState
from avo.exceptions import (
    ApprovalError,
    CheckpointNotFoundError,
    RunAlreadyTerminalError,
    RunNotFoundError,
    UnsafeResumeError,
)
from avo.models import Checkpoint, RunRecord, ToolResult, replaced
from avo.policies import LoopPolicy
from avo.progress import ProgressDetector
from avo.runtime_answers import output_json_schema
from avo.runtime_approval import record_given_answers, restore_turn
from avo.runtime_outcomes import awaiting_outcome, expire_outcome_requests, fail_cut_reruns
from avo.runtime_persistence import append, checkpoint, restore_provider, transition
from avo.runtime_plugins import check_plugin_set, start_breaker
from avo.state import RunState, is_terminal

if TYPE_CHECKING:
    from avo._run_setup import RunScope
    from avo.runtime import AgentRuntime

BATCH_STATES = (RunState.TOOL_PENDING, RunState.APPROVAL_PENDING, RunState.TOOL_EXECUTING)
"""States with an open tool-call batch (its assistant message is in the transcript)."""


def call_ids_given(events: list[AgentEvent]) -> set[str]:
    """Every tool-call id a run's responses carried (its MODEL_RESPONDED events)."""
    ids: set[str] = set()
    for event in events:
        if event.event_type is EventType.MODEL_RESPONDED:
            response = event.payload.get("response")
            calls: Any = response.get("tool_calls") if isinstance(response, dict) else None
            if not calls and isinstance(response, dict) and response.get("tool_call"):
                calls = [response["tool_call"]]  # a log written before parallel calls
            for call in calls or ():
                call_id = call.get("tool_call_id") if isinstance(call, dict) else None
                if isinstance(call_id, str):
                    ids.add(call_id)
    return ids


def unsafe_open_calls(log: RunLogState, events: Iterable[AgentEvent]) -> list[str]:
    """Tool calls ``log`` shows started without a durable result, that no person is asked about.

    What :meth:`AgentRuntime.resume` refuses to continue past (their effect is
    unknown); :func:`avo.ops.resume.close_open_calls` closes them with a failed result.
    """
    unsafe = log.open_tool_calls
    if unsafe and log.requested_inputs:  # a person decides about these (their effect
        unsafe = unsafe - awaiting_outcome(events)  # is unknown): runtime_outcomes
    return sorted(unsafe)


def check_output_schema(
    run_id: str, events: list[AgentEvent], schema: dict[str, JsonValue] | None
) -> None:
    """Refuse to resume a run with another output schema than the one it started with."""
    recorded = events[0].payload.get("output_schema") if events else None
    if recorded == schema:
        return
    if recorded is None:
        problem = "it was started without an output_schema; resume it without one"
    elif schema is None:
        title = recorded.get("title") if isinstance(recorded, dict) else None
        problem = (
            f"it was started with output_schema={title or 'a model'}; "
            "pass the same model as resume(run_id, output_schema=...)"
        )
    else:
        problem = "its output_schema differs from the one it was started with"
    raise UnsafeResumeError(f"Cannot safely resume run {run_id!r}: {problem}", run_id=run_id)


def context_from_checkpoint(
    rt: AgentRuntime, run: RunRecord, log: RunLogState, cp: Checkpoint
) -> _RunContext:
    """A run's context rebuilt from its latest checkpoint and its log."""
    policy = LoopPolicy.model_validate(cp.policy)
    response = cp.pending_response
    return _RunContext(
        batch=getattr(rt.event_store, "append_batch", None),
        run=run.model_copy(
            update={
                "token_usage": cp.token_usage,
                "token_accounting_available": cp.token_accounting_available,
                "steps": cp.next_step - 1,
                "user_state": dict(cp.user_state),
            }
        ),
        log=log,
        policy=policy,
        messages=list(cp.messages),
        started_at=rt.clock(),
        next_step=cp.next_step,
        detector=ProgressDetector(
            action_history=cp.repeated_action_history,
            observation_history=cp.observation_fingerprints,
            model_history=cp.model_response_fingerprints,
            progress_markers=cp.progress_markers,
        ),
        # Any call with a durable result must never run again.
        completed_tool_call_ids=set(cp.completed_tool_call_ids) | log.finished_tool_calls,
        consecutive_errors=cp.consecutive_errors,
        pending_response=response,
        partial_output=cp.partial_output,
        continuation_turns=cp.continuation_turns,
        output_retries=cp.output_retries,
    )


def recover_results_after_checkpoint(
    ctx: _RunContext, cp: Checkpoint, events: list[AgentEvent]
) -> RunState:
    """Line the transcript up with the pending decision; reuse durable tool results.

    A checkpoint written while the run was stopping may already hold the
    decision's messages: they are dropped, the handler adds them again. Calls
    of the pending batch that finished after the checkpoint keep their
    durable result (read back from TOOL_COMPLETED / TOOL_FAILED) and never run
    again; when all did, the run continues from OBSERVATION_RECORDED.
    """
    response = ctx.pending_response
    state = cp.state
    if response is None:
        return state
    messages = ctx.messages
    if response.content is not None:
        last = messages[-1] if messages else None
        if (
            last is not None
            and last.get("role") == "assistant"
            and last.get("content") == response.content
            and "tool_calls" not in last
        ):
            messages.pop()
        return state
    calls = list(response.tool_calls)
    opened = state in BATCH_STATES
    trim_batch(messages, calls, keep=opened)
    if opened:
        ctx.calls = calls
    finished = ctx.log.finished_tool_calls
    done = {call.tool_call_id for call in calls} & finished
    if not done:
        return state
    for event in events:
        if event.event_type in (EventType.TOOL_COMPLETED, EventType.TOOL_FAILED):
            call_id = event.payload.get("tool_call_id")
            if call_id in done and call_id not in ctx.results:
                result = ToolResult.model_validate(event.payload["result"])
                ctx.results[result.tool_call_id] = result
    if len(ctx.results) < len(calls) or state not in (
        RunState.DECISION_RECEIVED,
        *BATCH_STATES,
    ):
        return state
    if not opened:
        messages.append(tool_calls_message(calls, response.thinking))
        for call in calls:
            ctx.detector.record_action(call)
        ctx.calls = calls
    close_batch(ctx)
    ctx.pending_response = None
    return RunState.OBSERVATION_RECORDED


__all__ = [
    "BATCH_STATES",
    "call_ids_given",
    "check_output_schema",
    "context_from_checkpoint",
    "recover_results_after_checkpoint",
    "unsafe_open_calls",
]


def has_media(messages: Iterable[Mapping[str, Any]]) -> bool:
    """True when a transcript holds images or documents (checked once per run)."""
    if not any(type(message.get("content")) is list for message in messages):
        return False
    from avo.content_blocks import messages_have_media

    return messages_have_media(messages)


async def resumed_context(
    rt: AgentRuntime,
    scope: RunScope,
    run_id: str,
    output_schema: type[Any] | None,
    answers: Mapping[str, Answer | bool | str] | None,
) -> _RunContext:
    """Everything ``AgentRuntime.resume`` does before it drives the run again.

    Refuses a run that is missing, finished, without a checkpoint, started
    with other plugins or another output schema, or that has tool calls
    started without a durable result; otherwise rebuilds the run's context
    from its checkpoint and log, records ``answers``, and appends RUN_RESUMED
    (with a checkpoint when the state moved).
    """
    from avo._run_setup import session_of

    schema = output_json_schema(output_schema) if output_schema is not None else None
    run = await rt.event_store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(f"Run {run_id!r} was not found in the event store", run_id=run_id)
    if is_terminal(run.state) or await rt.event_store.is_terminal_run(run_id):
        raise RunAlreadyTerminalError(
            f"Run {run_id!r} already finished ({run.state.value}"
            f"{', ' + run.stop_reason.value if run.stop_reason else ''}); "
            "there is nothing to resume",
            run_id=run_id,
        )
    cp = await rt.event_store.get_latest_checkpoint(run_id)
    if cp is None:
        raise CheckpointNotFoundError(
            f"Run {run_id!r} has no checkpoint to resume from", run_id=run_id
        )
    events = await rt.event_store.get_events(run_id)
    log = RunLogState.from_events(run_id, events)
    check_plugin_set(rt, run_id, events)
    check_output_schema(run_id, events, schema)
    open_calls = unsafe_open_calls(log, events)
    if open_calls:
        raise UnsafeResumeError(
            "Cannot safely resume because these tool calls started without a durable "
            f"result: {', '.join(open_calls)}",
            run_id=run_id,
            tool_call_ids=tuple(open_calls),
        )
    restore_provider(rt, run_id, cp.provider_metadata)
    setup = await scope.prepare(run_id, run.task, session_of(events), resumed=True)
    ctx = context_from_checkpoint(rt, run, log, cp)
    ctx.media = has_media(ctx.messages)
    scope.attach(ctx, cp.shaper_state)
    ctx.call_ids_seen = call_ids_given(events)
    ctx.output_model = output_schema
    ctx.output_schema = schema
    restore_turn(rt, ctx, events)
    target = recover_results_after_checkpoint(ctx, cp, events)
    ctx.run = replaced(ctx.run, state=log.state)
    if answers:
        if log.state is not RunState.PAUSED:
            raise ApprovalError(
                f"run {run_id} is not waiting for an answer (it is {log.state.value})",
                run_id=run_id,
            )
        record_given_answers(rt, ctx, dict(answers))
    if ctx.asked:  # calls whose effect is unknown (see avo.runtime_outcomes)
        await fail_cut_reruns(rt, ctx, events)
        if log.state is RunState.PAUSED:
            expire_outcome_requests(rt, ctx)
    if log.state is not target:
        if log.state is not RunState.PAUSED:
            transition(rt, ctx, RunState.PAUSED)
        transition(rt, ctx, target)
    append(
        rt,
        ctx,
        EventType.RUN_RESUMED,
        {
            "checkpoint_id": cp.checkpoint_id,
            "checkpoint_sequence": cp.last_event_sequence,
            "state": target.value,
            **setup.payload(),
            **({"hooks_again": sorted(ctx.hooks_again)} if ctx.hooks_again else {}),
        },
    )
    if target is not cp.state:
        await checkpoint(rt, ctx)
    start_breaker(rt)
    return ctx
