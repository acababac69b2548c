"""Tool calls whose effect is unknown: a person decides whether they run again.

A tool invocation raises :class:`~avo.exceptions.ToolOutcomeUnknownError` when
nobody can tell whether the call took effect: an engine's worker died while it
ran a non-idempotent tool (see docs/temporal.md), a remote tool's connection
dropped mid-call. Running it again could repeat the effect; recording it as
failed could hide one. So the call keeps its TOOL_STARTED without a result, the
run asks a person (HUMAN_INPUT_REQUESTED, kind ``approval``, rule
``outcome_unknown``) and pauses at TOOL_EXECUTING:

- approving runs the call again (a new TOOL_STARTED, then its result);
- denying records it as failed with the person's reason, which the model reads
  ("it already happened" is a good one);
- while nobody answers, the run stays paused; an expired request counts as
  denied.

A person is asked once per call: a call whose effect is unknown again after a
person approved running it again gets a failed result saying so.

A tool that needs a person's answer mid-call raises
:class:`~avo.exceptions.ToolInputRequiredError` after stopping short (an MCP
server's elicitation, answered "cancel" for now). The call keeps its
TOOL_STARTED without a result too; the run asks the tool's question
(HUMAN_INPUT_REQUESTED, kind ``question``, rule ``tool_input``, with its form)
and pauses at TOOL_EXECUTING. Any answer runs the call again with the answer
at hand (:func:`avo.approval.tool_input`): a reply (accept), a denial
(decline), an expiry (cancel). A call that asks a second question after its
first was answered fails, saying so. If the process dies while the question
waits, nothing is lost (the call is not running; resume asks again or takes
the answer); if it dies during the rerun, the call is an ordinary open call
(resume refuses until ``--fail-open-tools`` records it as failed).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from avo._run_context import _RunContext
from avo.approval import TOOL_INPUT, Approval, HumanRequest, RequestKind, ToolInput
from avo.events import AgentEvent, EventType
from avo.exceptions import ToolInputRequiredError
from avo.models import ToolCall
from avo.runtime_approval import CallDecision, record_answer, request_person
from avo.runtime_persistence import append, record_tool_result
from avo.tools import failed_result

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime

OUTCOME_UNKNOWN = "outcome_unknown"
"""The ``rule`` of a request asking a person about a call whose effect is unknown."""


def awaiting_outcome(events: Iterable[AgentEvent]) -> set[str]:
    """Calls the log asks a person about because their effect is unknown, or because the
    tool asked a question (until the call runs again: a rerun cut off is an open call)."""
    unknown: set[str] = set()
    inputs: set[str] = set()
    for event in events:
        kind = event.event_type
        if kind is EventType.HUMAN_INPUT_REQUESTED:
            rule = event.payload.get("rule")
            if rule == OUTCOME_UNKNOWN:
                unknown.add(str(event.payload.get("tool_call_id")))
            elif rule == TOOL_INPUT:
                inputs.add(str(event.payload.get("tool_call_id")))
        elif kind is EventType.TOOL_STARTED and inputs:
            inputs.discard(str(event.payload.get("tool_call_id")))
    return unknown | inputs


def _asked_about_outcome(ctx: _RunContext, call_id: str) -> bool:
    request = ctx.asked.get(call_id)
    return request is not None and request.rule == OUTCOME_UNKNOWN


def _asked_for_input(ctx: _RunContext, call_id: str) -> bool:
    request = ctx.asked.get(call_id)
    return request is not None and request.rule == TOOL_INPUT


async def note_input(
    rt: AgentRuntime, ctx: _RunContext, call: ToolCall, exc: ToolInputRequiredError
) -> None:
    """Ask the question ``call``'s tool raised (the run pauses), or fail a second one."""
    from avo.runtime_tools import call_payload

    call_id = call.tool_call_id
    if _asked_for_input(ctx, call_id) and call_id in ctx.answers:
        await _fail(
            rt,
            ctx,
            call,
            f"{call.name} asked a second question ({exc.question!r}) after its first was "
            "answered; a call gets one answer from a person: call it again to be asked anew",
        )
        return
    ctx.asked.pop(call_id, None)  # an approval a person gave before it ran is settled
    ctx.answers.pop(call_id, None)
    metadata = rt.tools.metadata_of(call.name)
    now = rt.clock()
    expires_in = ctx.policy.human_input_timeout_seconds
    request = HumanRequest(
        run_id=ctx.run_id,
        tool_call_id=call_id,
        kind=RequestKind.QUESTION,
        tool_name=call.name,
        arguments=dict(call_payload(rt, ctx, call)["arguments"]),
        risk=metadata.effective_risk.value if metadata is not None else None,
        reason=rt.redactor.text(f"{call.name} needs an answer to go on"),
        rule=TOOL_INPUT,
        question=rt.redactor.text(exc.question),
        requested_at=now,
        expires_at=now + timedelta(seconds=expires_in) if expires_in else None,
        schema=dict(exc.schema) if exc.schema is not None else None,
    )
    append(rt, ctx, EventType.HUMAN_INPUT_REQUESTED, request.payload(), redact=False)
    ctx.asked[call_id] = request


def input_for(ctx: _RunContext, call: ToolCall) -> ToolInput | None:
    """The answer a person gave to the question ``call``'s tool raised (None: none yet)."""
    request = ctx.asked.get(call.tool_call_id)
    if request is None or request.rule != TOOL_INPUT:
        return None
    answer = ctx.answers.get(call.tool_call_id)
    if answer is None:
        return None
    by = answer.get("by")
    schema = dict(request.schema) if request.schema is not None else None
    if answer.get("decision") == "reply":
        text = str(answer.get("text") or "")
        if request.schema is None:
            return ToolInput("accept", {"answer": text}, by=by)
        from avo.forms import form_content

        try:
            return ToolInput("accept", form_content(request.schema, text), by=by, schema=schema)
        except ValueError as exc:  # recorded before the form was checked: say so
            misfit = f"the answer did not fit: {exc}"
            return ToolInput("decline", reason=misfit, by=by, schema=schema)
    reason = answer.get("reason")
    if answer.get("expired") or by == "policy":
        return ToolInput("cancel", reason=reason, by=by, schema=schema)
    return ToolInput("decline", reason=reason, by=by, schema=schema)


async def _fail(rt: AgentRuntime, ctx: _RunContext, call: ToolCall, error: str) -> None:
    started = rt.clock()
    result = failed_result(call, error, started, rt.timer(), clock=rt.clock, timer=rt.timer)
    await record_tool_result(rt, ctx, result)


async def note_unknown(rt: AgentRuntime, ctx: _RunContext, call: ToolCall, cause: str) -> None:
    """Ask a person about ``call`` (its effect is unknown), or fail it if one was asked."""
    if _asked_about_outcome(ctx, call.tool_call_id):
        await _fail(
            rt,
            ctx,
            call,
            f"the tool call's effect is unknown again ({cause}) after a person approved "
            "running it again; it is not run a third time: check whether it took effect "
            "before calling it again",
        )
        return
    reason = (
        f"nobody can tell whether {call.name} took effect ({cause}); approve to run it "
        "again, or deny (with a reason the model reads, e.g. 'it already happened')"
    )
    decision = CallDecision(call, Approval.ask(reason, rule=OUTCOME_UNKNOWN), "engine")
    request_person(rt, ctx, decision, None)


async def fail_cut_reruns(rt: AgentRuntime, ctx: _RunContext, events: list[AgentEvent]) -> None:
    """Fail calls a person let run again whose re-run was cut off too (on resume).

    The re-run started (a TOOL_STARTED after the approval) and left no result:
    its effect is unknown a second time, and nobody is asked twice.
    """
    asked: set[str] = set()  # (answers to an earlier approval request do not count)
    approved: dict[str, int] = {}
    cut: set[str] = set()
    for event in events:
        call_id = str(event.payload.get("tool_call_id"))
        kind = event.event_type
        if kind is EventType.HUMAN_INPUT_REQUESTED:
            approved.pop(call_id, None)
            if event.payload.get("rule") == OUTCOME_UNKNOWN:
                asked.add(call_id)
            else:
                asked.discard(call_id)
            continue
        if call_id not in asked:
            continue
        if kind is EventType.HUMAN_INPUT_RECEIVED and event.payload.get("decision") == "approve":
            approved[call_id] = event.sequence
        elif kind is EventType.TOOL_STARTED and call_id in approved:
            cut.add(call_id)
    cut &= ctx.log.open_tool_calls
    for call in ctx.calls:
        if call.tool_call_id in cut:
            await _fail(
                rt,
                ctx,
                call,
                "the tool call's effect is unknown: a person approved running it again and "
                "that run was cut off too; it is not run a third time: check whether it took "
                "effect before calling it again",
            )


def expire_outcome_requests(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Record unanswered outcome requests past their expiry as denied (the run is PAUSED)."""
    now = rt.clock()
    for call_id, request in list(ctx.asked.items()):
        if request.rule not in (OUTCOME_UNKNOWN, TOOL_INPUT):
            continue
        if call_id in ctx.answers or not request.expired(now):
            continue
        reason = "nobody decided before the request expired; it is not run again"
        if request.rule == TOOL_INPUT:
            reason = "nobody answered before the request expired"
        given = {"decision": "deny", "reason": reason, "expired": True}
        record_answer(rt, ctx, request, given, by="policy")


async def settle_unknown(
    rt: AgentRuntime, ctx: _RunContext, todo: list[ToolCall]
) -> list[ToolCall] | None:
    """The open calls to run now, after recording the denied unknown ones as failed.

    None while a person has not decided about some call: then nothing runs (the
    calls after it in the batch wait behind it, as after any barrier).
    """
    if not ctx.asked:
        return todo
    runnable: list[ToolCall] = []
    for call in todo:
        call_id = call.tool_call_id
        if _asked_for_input(ctx, call_id):  # runs again with whatever the answer is
            if call_id not in ctx.answers:
                return None
            runnable.append(call)
            continue
        if not _asked_about_outcome(ctx, call_id):
            runnable.append(call)
            continue
        answer: dict[str, Any] | None = ctx.answers.get(call_id)
        if answer is None:
            return None
        if answer.get("decision") == "approve":
            runnable.append(call)
            continue
        by = answer.get("by") or "a person"
        why = answer.get("reason") or "no reason given"
        await _fail(
            rt,
            ctx,
            call,
            f"the tool call's effect is unknown (its run was cut off) and {by} chose not to "
            f"run it again: {why}",
        )
    return runnable


def waiting_for_outcome(ctx: _RunContext) -> bool:
    """True when a call of the batch waits for a person to decide about its unknown effect."""
    results, answers = ctx.results, ctx.answers
    return any(
        (_asked_about_outcome(ctx, call.tool_call_id) or _asked_for_input(ctx, call.tool_call_id))
        and call.tool_call_id not in results
        and call.tool_call_id not in answers
        for call in ctx.calls
    )


__all__ = [
    "OUTCOME_UNKNOWN",
    "awaiting_outcome",
    "expire_outcome_requests",
    "fail_cut_reruns",
    "input_for",
    "note_input",
    "note_unknown",
    "settle_unknown",
    "waiting_for_outcome",
]
