"""The tool-call handlers: TOOL_PENDING, APPROVAL_PENDING and TOOL_EXECUTING.

A model turn may ask for several tool calls (the *batch*, in the model's
order). Every call is requested, then decided one by one in the model's order
(:func:`avo.runtime_approval.decide_call`: PRE_TOOL_USE hooks, recorded
answers, then the approval seam; a call that needs a person pauses the run
durably once every call is decided or waiting), then run:
consecutive calls to tools that only inspect run concurrently, up to
``LoopPolicy.max_parallel_tool_calls``; a call whose tool may modify or
execute (or declares no risk) is a *barrier*: it starts after every earlier
call finished and finishes before any later call starts. ``TOOL_STARTED`` is
durable before a tool can act; each result is recorded as it arrives and joins
the transcript, in the model's order, when the batch closes.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from avo._deadline import within
from avo._hook_faults import report_hook_faults
from avo._run_context import _RunContext
from avo._transcript import close_batch
from avo.approval import TOOL_INPUT, Verdict, given_tool_input, reset_tool_input
from avo.events import EventType
from avo.exceptions import ToolInputRequiredError, ToolOutcomeUnknownError
from avo.hooks import HookContext, HookEvent
from avo.models import ToolCall, ToolResult, ToolRisk, utc_now
from avo.runtime_approval import (
    decide_call,
    pause_for_people,
    record_approved,
    record_denied,
    request_person,
)
from avo.runtime_checks import after_observation_checks
from avo.runtime_outcomes import (
    input_for,
    note_input,
    note_unknown,
    settle_unknown,
    waiting_for_outcome,
)
from avo.runtime_persistence import (
    append,
    checkpoint,
    flush,
    record_tool_result,
    terminate,
    transition,
    trigger_policy,
)
from avo.state import RunState, StopReason
from avo.tool_progress import recording_progress
from avo.tools import failed_result

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime


def always_approve(call: ToolCall) -> bool:
    """The default approval callback: approve every call (the handler skips flushing for it)."""
    return True


def open_calls(ctx: _RunContext) -> list[ToolCall]:
    """The batch's calls that have no durable result yet (nor a denial), in the model's order."""
    results, outcomes = ctx.results, ctx.outcomes
    if not results and not outcomes:
        return ctx.calls
    return [
        call
        for call in ctx.calls
        if call.tool_call_id not in results and call.tool_call_id not in outcomes
    ]


async def handle_tool_pending(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Request approval for every open call of the batch (there is no bypass path)."""
    run_id = ctx.run_id
    for call in ctx.calls if not ctx.results else open_calls(ctx):
        redacted = call_payload(rt, ctx, call)
        call_id = redacted["tool_call_id"]
        append(
            rt,
            ctx,
            EventType.TOOL_APPROVAL_REQUESTED,
            {
                "tool_call_id": call_id,
                "idempotency_key": f"{run_id}:{call_id}",
                "name": redacted["name"],
                "mode": "v0.1_callback",
            },
            redact=False,
        )
    transition(rt, ctx, RunState.APPROVAL_PENDING)


async def handle_approval_pending(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Decide every open call in the model's order (see :mod:`avo.runtime_approval`).

    Approved calls are recorded (TOOL_APPROVED); a denied call's reason becomes
    its result and the others go on (``LoopPolicy.on_tool_denied = "stop"``
    ends the run instead); calls that need a person are requested, and once
    every call is decided or waiting the run pauses durably for them.
    """
    outside = rt.hooks is not None or rt._approval_callback is not always_approve
    calls = ctx.calls
    results, outcomes = ctx.results, ctx.outcomes
    waiting = False
    for index, call in enumerate(calls):
        call_id = call.tool_call_id
        if call_id in results or call_id in outcomes:
            continue
        if not outside and not ctx.asked and not rt.tools.asks_human(call.name):
            # the default callback approves every call: nothing to ask
            approved = call_payload(rt, ctx, call)
            append(rt, ctx, EventType.TOOL_APPROVED, dict(approved), redact=False)
            continue
        await flush(rt, ctx)  # an outside party decides: let it see the requests
        decision = await decide_call(rt, ctx, call)
        if decision.call is not call:
            if _shared(ctx, calls):
                calls = ctx.calls = list(calls)  # never edit the response's own list
            call = calls[index] = decision.call
        verdict = decision.verdict
        if verdict is Verdict.ASK:
            request_person(rt, ctx, decision, _model_words(ctx))
            waiting = True
        elif verdict is Verdict.DENY:
            outcomes[call_id] = record_denied(rt, ctx, decision)
            if ctx.policy.on_tool_denied == "stop":
                await trigger_policy(
                    rt,
                    ctx,
                    StopReason.POLICY_DENIED,
                    f"Run stopped: tool {call.name!r} denied: {decision.approval.reason}",
                )
                return
        else:
            record_approved(rt, ctx, decision)
    if waiting:
        await pause_for_people(rt, ctx)
        return
    transition(rt, ctx, RunState.TOOL_EXECUTING)


def _model_words(ctx: _RunContext) -> str | None:
    """What the model said along with its calls (its visible reasoning), if anything."""
    response = ctx.pending_response
    if response is None:
        return None
    texts = [
        str(block.get("thinking") or block.get("text") or "")
        for block in response.thinking
        if isinstance(block, dict)
    ]
    words = " ".join(" ".join(texts).split())
    return (words[:497] + "...") if len(words) > 500 else (words or None)


def _shared(ctx: _RunContext, calls: list[ToolCall]) -> bool:
    """True when ``calls`` is the pending response's own list (handed to the batch as is)."""
    response = ctx.pending_response
    return response is not None and calls is response.tool_calls


def _runs_alongside(rt: AgentRuntime, call: ToolCall) -> bool:
    """True when ``call`` may run concurrently with others (its tool only inspects)."""
    return rt.tools.risk(call.name) is ToolRisk.INSPECT


async def handle_tool_executing(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Run the batch's open calls (barriers alone, in order), then close the batch and check.

    A call whose effect turned out unknown (:mod:`avo.runtime_outcomes`) pauses the
    run for a person before the batch closes; nothing after it starts meanwhile.
    """
    todo = open_calls(ctx)  # (denied calls never run: their reason is their result)
    if ctx.asked:  # a call whose effect is unknown runs again only if a person says so
        settled = await settle_unknown(rt, ctx, todo)
        if settled is None:
            await pause_for_people(rt, ctx, back_to=RunState.TOOL_EXECUTING)
            return
        todo = settled
    if len(todo) == 1:  # the common turn: one call
        crashed = await _run_alone(rt, ctx, todo[0])
    else:
        crashed = await _run_batch(rt, ctx, todo)
    if crashed is not None:
        await terminate(rt, ctx, RunState.FAILED, StopReason.TOOL_ERROR, error=crashed)
        return
    if ctx.asked and waiting_for_outcome(ctx):
        await pause_for_people(rt, ctx, back_to=RunState.TOOL_EXECUTING)
        return
    calls = ctx.calls
    results = ctx.results
    ctx.pending_response = None
    close_batch(ctx)
    ctx.approved.clear()  # the turn's approval step is over
    ctx.asked.clear()
    ctx.answers.clear()
    transition(rt, ctx, RunState.OBSERVATION_RECORDED)
    if rt.hooks is not None:
        await flush(rt, ctx)
        for call in calls:
            after = await rt.hooks.fire(
                HookEvent.POST_TOOL_USE,
                HookContext(
                    HookEvent.POST_TOOL_USE,
                    ctx.run_id,
                    tool_call=call,
                    tool_result=results.get(call.tool_call_id),
                    run=ctx.run,
                ),
            )
            if after.faults:
                report_hook_faults(
                    rt, ctx, "post_tool_use", after.faults, outcome="ignored", run_id=ctx.run_id
                )
    await checkpoint(rt, ctx)
    await after_observation_checks(rt, ctx)


async def _run_batch(rt: AgentRuntime, ctx: _RunContext, todo: list[ToolCall]) -> str | None:
    """Run several calls: inspect-only neighbours together, every other call alone, in order."""
    limit = ctx.policy.max_parallel_tool_calls
    crashed: str | None = None
    index = 0
    while index < len(todo) and crashed is None:
        if ctx.asked and waiting_for_outcome(ctx):
            break  # a call's effect is unknown: nothing after it starts until a person decides
        if index:  # the results so far are durable before another call starts
            await flush(rt, ctx)
        end = index + 1
        if limit > 1 and end < len(todo) and _runs_alongside(rt, todo[index]):
            while end < len(todo) and _runs_alongside(rt, todo[end]):
                end += 1
        if end - index > 1:
            crashed = await _run_concurrently(rt, ctx, todo[index:end], limit)
        else:  # a barrier, or a call with no neighbour to run beside
            crashed = await _run_alone(rt, ctx, todo[index])
        index = end
    return crashed


async def _run_alone(rt: AgentRuntime, ctx: _RunContext, call: ToolCall) -> str | None:
    """Run one call: TOOL_STARTED durable first, then the tool, then its result recorded."""
    append(rt, ctx, EventType.TOOL_STARTED, dict(call_payload(rt, ctx, call)), redact=False)
    await flush(rt, ctx)  # TOOL_STARTED is durable before the tool can have any effect
    started_at = rt.clock()
    started = rt.timer()
    answered = human_result(ctx, call, started_at, started, clock=rt.clock, timer=rt.timer)
    if answered is not None:  # a person answered it (ask_user): the answer is the result
        await record_tool_result(rt, ctx, answered)
        return None
    given = given_tool_input(input_for(ctx, call)) if ctx.asked else None
    try:  # (what _invoke does, without a task)
        result = await within(
            ctx.policy.tool_timeout_seconds,
            recording_progress(
                rt,
                ctx,
                call,
                rt.tools.invoke(call, completed_tool_call_ids=ctx.completed_tool_call_ids),
                live=True,
            ),
        )
    except ToolOutcomeUnknownError as exc:
        await note_unknown(rt, ctx, call, str(exc))
        return None
    except ToolInputRequiredError as exc:
        await note_input(rt, ctx, call, exc)
        return None
    except Exception as exc:
        result, tool_crashed = _failure(rt, ctx, call, exc, started_at, started)
        await record_tool_result(rt, ctx, result)
        return result.error if tool_crashed else None
    finally:
        if given is not None:
            reset_tool_input(given)
    await record_tool_result(rt, ctx, result)
    return None


Interrupted = ToolOutcomeUnknownError | ToolInputRequiredError
"""A call that stopped without a result: its effect is unknown, or it asks a person."""


async def _invoke(
    rt: AgentRuntime, ctx: _RunContext, call: ToolCall
) -> tuple[ToolResult | Interrupted, bool]:
    """Run one call under the tool timeout: its result (or that its effect is unknown,
    or its question), and whether the tool crashed."""
    started_at = rt.clock()
    started = rt.timer()
    answered = human_result(ctx, call, started_at, started, clock=rt.clock, timer=rt.timer)
    if answered is not None:
        return answered, False
    if ctx.asked:  # (this task's own context: the answer reaches this call only)
        given_tool_input(input_for(ctx, call))
    try:
        result = await within(
            ctx.policy.tool_timeout_seconds,
            recording_progress(
                rt,
                ctx,
                call,
                rt.tools.invoke(call, completed_tool_call_ids=ctx.completed_tool_call_ids),
                live=False,
            ),
        )
    except (ToolOutcomeUnknownError, ToolInputRequiredError) as exc:
        return exc, False
    except Exception as exc:
        return _failure(rt, ctx, call, exc, started_at, started)
    return result, False


def human_result(
    ctx: _RunContext,
    call: ToolCall,
    started_at: datetime,
    started: float,
    *,
    clock: Callable[[], datetime] = utc_now,
    timer: Callable[[], float] = time.perf_counter,
) -> ToolResult | None:
    """The result of a call a person answered (an ``asks_human`` tool): their answer."""
    answer = ctx.answers.get(call.tool_call_id)
    if answer is None or answer.get("decision") != "reply":
        return None
    request = ctx.asked.get(call.tool_call_id)
    if request is not None and request.rule == TOOL_INPUT:
        return None  # the tool asked it mid-call: it runs again with the answer
    return ToolResult(
        tool_call_id=call.tool_call_id,
        tool_name=call.name,
        success=True,
        output={"answer": answer.get("text")},
        started_at=started_at,
        finished_at=max(clock(), started_at),
        duration_ms=(timer() - started) * 1000,
    )


def _failure(
    rt: AgentRuntime,
    ctx: _RunContext,
    call: ToolCall,
    exc: Exception,
    started_at: datetime,
    started: float,
) -> tuple[ToolResult, bool]:
    """The failed result of a call that timed out or raised, and whether the tool crashed.

    A tool that raises outside the Tool contract gets a failed result (so the
    call has a durable outcome) and ends the run FAILED / TOOL_ERROR.
    """
    if isinstance(exc, TimeoutError):
        error = (
            f"Tool {call.name!r} exceeded the configured timeout of "
            f"{ctx.policy.tool_timeout_seconds:g} seconds."
        )
        return failed_result(
            call, error, started_at, started, clock=rt.clock, timer=rt.timer
        ), False
    crashed = f"Tool {call.name!r} raised {type(exc).__name__}: {exc}"
    return failed_result(call, crashed, started_at, started, clock=rt.clock, timer=rt.timer), True


def _started(rt: AgentRuntime, ctx: _RunContext, call: ToolCall) -> None:
    append(rt, ctx, EventType.TOOL_STARTED, dict(call_payload(rt, ctx, call)), redact=False)


async def _run_concurrently(
    rt: AgentRuntime, ctx: _RunContext, calls: list[ToolCall], limit: int
) -> str | None:
    """Run inspect-only calls ``limit`` at a time; record each result as it arrives.

    The handler stays the run's only writer: the tasks only run tools. A
    result that arrives while others still run is flushed at once, and before
    another call starts (in its own write), so a crash leaves as few calls as
    possible without a durable result, and none that had not begun. After a
    tool crashed, no further call starts; the ones running finish.
    """
    waiting = deque(calls)
    order = {id(call): position for position, call in enumerate(calls)}  # (no model __eq__)
    running: dict[asyncio.Task[tuple[ToolResult | Interrupted, bool]], ToolCall] = {}
    crashed: str | None = None
    fresh = False  # results recorded since the last flush
    try:
        while True:
            starting: list[ToolCall] = []
            if crashed is None:
                while waiting and len(running) + len(starting) < limit:
                    starting.append(waiting.popleft())
            if not running and not starting:
                return crashed
            if fresh and starting:  # results are durable before another call starts
                await flush(rt, ctx)
            for call in starting:
                _started(rt, ctx, call)
            # New TOOL_STARTED events are durable before their tools act, and results
            # recorded meanwhile are durable before the next wait.
            await flush(rt, ctx)
            fresh = False
            for call in starting:
                running[asyncio.create_task(_invoke(rt, ctx, call))] = call
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=lambda t: order[id(running[t])]):
                call = running.pop(task)
                result, tool_crashed = task.result()
                fresh = True
                if isinstance(result, ToolOutcomeUnknownError):
                    await note_unknown(rt, ctx, call, str(result))
                    continue
                if isinstance(result, ToolInputRequiredError):
                    await note_input(rt, ctx, call, result)
                    continue
                await record_tool_result(rt, ctx, result)
                if tool_crashed and crashed is None:
                    crashed = result.error
    except BaseException:
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        raise


def call_payload(rt: AgentRuntime, ctx: _RunContext, call: ToolCall) -> dict[str, Any]:
    """The redacted tool_call_id / name / arguments of ``call``, redacted once per call.

    TOOL_REQUESTED, TOOL_APPROVAL_REQUESTED, TOOL_APPROVED and TOOL_STARTED all
    carry them; a hook that rewrites the arguments makes a new call object.
    """
    cached = ctx.call_payload
    if cached is not None and cached[0] is call:
        return cached[1]
    cached = ctx.call_payloads.get(call.tool_call_id)
    if cached is None or cached[0] is not call:
        payload = {
            "tool_call_id": call.tool_call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        cached = ctx.call_payloads[call.tool_call_id] = (call, rt.redactor.value(payload))
    return cached[1]


__all__ = [
    "always_approve",
    "call_payload",
    "handle_approval_pending",
    "handle_tool_executing",
    "handle_tool_pending",
    "human_result",
    "open_calls",
]
