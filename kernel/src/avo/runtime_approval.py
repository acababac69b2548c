"""The approval step of one tool call, and the durable pause for a person.

For each call, in the model's order (:func:`decide_call`):

1. PRE_TOOL_USE hooks (a block, or a failing guard, denies), once per call
   and turn: a call approved or waiting for a person keeps what its hooks gave
   when the run continues, in place or resumed elsewhere (its rewritten
   arguments are recorded with the decision, ``hook_arguments``);
2. a decision the log already holds (the call was approved before a pause);
3. a person's recorded answer (:mod:`avo.ops.approval`), or the expiry of an
   unanswered request (nobody answered in time: denied);
4. a call to a tool that is not registered is let through (nothing can run:
   the registry fails it and the model reads why; nobody is asked);
5. a tool that asks a person (``ToolMetadata.asks_human``) asks its question;
6. the approval callback: allow, deny, or ask (:class:`avo.approval.Approval`).

A call that needs a person gets a HUMAN_INPUT_REQUESTED event. Once every
call of the turn is decided or waiting, :func:`pause_for_people` checkpoints,
moves the run to PAUSED (durably) and, if the runtime has an answerer (a
terminal prompt), asks it; answers found there continue the run in place,
anything else leaves it paused for ``avo runs approve|deny|answer`` and a
resume. A denied call's reason is what the model reads as its result; the run
goes on unless ``LoopPolicy.on_tool_denied`` is ``"stop"``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from avo._hook_faults import report_hook_faults
from avo._run_context import _RunContext
from avo.approval import (
    _DECIDING,
    Answer,
    Approval,
    HumanRequest,
    RequestKind,
    Verdict,
    as_approval,
)
from avo.events import AgentEvent, EventType
from avo.hooks import HookContext, HookEvent
from avo.models import ToolCall, ToolMetadata
from avo.runtime_persistence import append, append_with_run, checkpoint, flush, transition
from avo.state import STATE_VALUE, RunState

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime

AWAITING_APPROVAL = "awaiting approval"
AWAITING_ANSWER = "awaiting an answer"
"""The ``reason`` of the STATE_CHANGED to ``paused`` when a run waits for a person."""


@dataclass(frozen=True)
class CallDecision:
    """What the approval step decided for one call.

    ``call`` is the call to run (a PRE_TOOL_USE hook may have rewritten its
    arguments). ``decided_by``: ``hook``, ``approval`` (the callback),
    ``human``, ``policy`` (an expired request), or ``log`` (approved before a
    pause: nothing new to record).
    """

    call: ToolCall
    approval: Approval
    decided_by: str
    rewritten: bool = False
    """A PRE_TOOL_USE hook replaced the call's arguments (``call`` holds its version)."""

    @property
    def verdict(self) -> Verdict:
        """allow, deny or ask."""
        return self.approval.verdict


def _metadata(rt: AgentRuntime, name: str) -> ToolMetadata | None:
    return rt.tools.metadata_of(name)  # None: not registered (the registry fails the call)


async def _hooks(
    rt: AgentRuntime, ctx: _RunContext, call: ToolCall, *, again: bool = False
) -> CallDecision | ToolCall:
    if rt.hooks is None:
        return call
    decision = await rt.hooks.fire(
        HookEvent.PRE_TOOL_USE,
        HookContext(
            HookEvent.PRE_TOOL_USE,
            ctx.run_id,
            tool_call=call,
            run=ctx.run,
            extra={"again": True} if again else {},
        ),
    )
    if decision.faults:  # a failing guard fails closed: the decision blocks
        report_hook_faults(
            rt, ctx, "pre_tool_use", decision.faults, outcome="denied", run_id=ctx.run_id
        )
    if decision.blocked:
        reason = decision.reason or "blocked by a pre_tool_use hook"
        return CallDecision(call, Approval.deny(reason), "hook")
    if decision.modified_args is not None:
        return call.model_copy(update={"arguments": dict(decision.modified_args)})
    return call


def _from_answer(call: ToolCall, answer: dict[str, Any]) -> CallDecision:
    decision = answer.get("decision")
    by = answer.get("by") or "a person"
    if decision in ("approve", "reply"):
        reason = str(answer.get("reason") or "")
        return CallDecision(call, Approval.allow(reason, rule=f"answered by {by}"), "human")
    reason = answer.get("reason") or ""
    if answer.get("expired") or by == "policy":  # nobody answered in time
        return CallDecision(call, Approval.deny(str(reason), rule="expired"), "policy")
    text = f"the user ({by}) denied this call" + (f": {reason}" if reason else "")
    return CallDecision(call, Approval.deny(text, rule=f"answered by {by}"), "human")


async def decide_call(rt: AgentRuntime, ctx: _RunContext, call: ToolCall) -> CallDecision:
    """The approval step of one call (see the module docstring); records nothing but
    hook faults and an expiry answer."""
    call_id = call.tool_call_id
    again = call_id in ctx.hooks_again
    rewritten = False
    if again or (call_id not in ctx.approved and call_id not in ctx.asked):
        hooked = await _hooks(rt, ctx, call, again=again)  # once per call and turn
        ctx.hooks_again.discard(call_id)
        if isinstance(hooked, CallDecision):
            return hooked
        rewritten = hooked is not call
        call = hooked
    elif call_id in ctx.hook_args:  # resumed: the arguments the hook gave, from the log
        call = call.model_copy(update={"arguments": ctx.hook_args.pop(call_id)})
        rewritten = True
    if call_id in ctx.approved:
        return CallDecision(call, Approval.allow(), "log", rewritten)
    answer = ctx.answers.get(call_id)
    if answer is not None:
        return replace(_from_answer(call, answer), rewritten=rewritten)
    request = ctx.asked.get(call_id)
    if request is not None:
        now = rt.clock()
        if request.expired(now):
            assert request.expires_at is not None
            reason = (
                f"nobody answered the {request.kind.value} request before it expired at "
                f"{request.expires_at:%Y-%m-%d %H:%M:%S %Z}"
            )
            given = {"decision": "deny", "reason": reason, "expired": True}
            record_answer(rt, ctx, request, given, by="policy")
            return replace(_from_answer(call, ctx.answers[call_id]), rewritten=rewritten)
        return CallDecision(
            call, Approval.ask(request.reason, rule=request.rule), "human", rewritten
        )
    metadata = _metadata(rt, call.name)
    if metadata is None:  # nothing can run: the registry fails it, the model reads why
        allowed = Approval.allow(rule="not a registered tool")
        return CallDecision(call, allowed, "approval", rewritten)
    if metadata.asks_human:
        asked = Approval.ask(f"{call.name} asks a question")
        return CallDecision(call, asked, "human", rewritten)
    token = _DECIDING.set(ctx.run_id)  # avo.approval.deciding_run_id() inside the callback
    try:
        verdict = rt._approval_callback(call)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    finally:
        _DECIDING.reset(token)
    return CallDecision(call, as_approval(verdict), "approval", rewritten)


# ---------------------------------------------------------------- recording


def record_approved(rt: AgentRuntime, ctx: _RunContext, decision: CallDecision) -> None:
    """TOOL_APPROVED with who decided and by which rule (nothing new for ``log``)."""
    from avo.runtime_tools import call_payload

    if decision.decided_by == "log":
        return
    payload: dict[str, Any] = dict(call_payload(rt, ctx, decision.call))
    payload["decided_by"] = decision.decided_by
    if decision.rewritten:
        payload["hook_arguments"] = _hook_arguments(payload, decision.call)
    if decision.approval.rule:
        payload["rule"] = decision.approval.rule
    if decision.approval.reason:
        payload["reason"] = rt.redactor.text(decision.approval.reason)
    append(rt, ctx, EventType.TOOL_APPROVED, payload, redact=False)
    ctx.approved.add(decision.call.tool_call_id)


def record_denied(rt: AgentRuntime, ctx: _RunContext, decision: CallDecision) -> str:
    """TOOL_DENIED; returns the text the model reads as the call's result."""
    call = decision.call
    reason = decision.approval.reason or "the approval callback denied the tool call"
    blocked_by = {"approval": "approval", "hook": "hook"}.get(decision.decided_by, "human")
    if decision.decided_by == "policy":
        blocked_by = "expired"
    payload: dict[str, Any] = {
        "tool_call_id": call.tool_call_id,
        "name": call.name,
        "reason": reason,
        "blocked_by": blocked_by,
    }
    if decision.approval.rule:
        payload["rule"] = decision.approval.rule
    append(rt, ctx, EventType.TOOL_DENIED, payload)
    return f"the tool call was denied: {rt.redactor.text(reason)}"


def _hook_arguments(payload: dict[str, Any], call: ToolCall) -> str:
    """``exact``: the recorded arguments are the hook's (resume uses them); ``redacted``:
    the log masked part of them, so resuming runs the hooks again for this call."""
    return "exact" if payload.get("arguments") == call.arguments else "redacted"


def request_person(
    rt: AgentRuntime, ctx: _RunContext, decision: CallDecision, model_reason: str | None
) -> HumanRequest:
    """HUMAN_INPUT_REQUESTED for a call that waits for a person (once per call)."""
    from avo.runtime_tools import call_payload

    call = decision.call
    existing = ctx.asked.get(call.tool_call_id)
    if existing is not None:
        return existing
    metadata = _metadata(rt, call.name)
    question = metadata is not None and metadata.asks_human
    now = rt.clock()
    expires_in = decision.approval.expires_in or ctx.policy.human_input_timeout_seconds
    arguments = call_payload(rt, ctx, call)["arguments"]
    choices = call.arguments.get("choices") if question else None
    request = HumanRequest(
        run_id=ctx.run_id,
        tool_call_id=call.tool_call_id,
        kind=RequestKind.QUESTION if question else RequestKind.APPROVAL,
        tool_name=call.name,
        arguments=dict(arguments),
        risk=metadata.effective_risk.value if metadata is not None else None,
        reason=rt.redactor.text(decision.approval.reason),
        rule=decision.approval.rule,
        model_reason=rt.redactor.text(model_reason) if model_reason else None,
        question=rt.redactor.text(str(call.arguments.get("question", ""))) if question else None,
        choices=tuple(str(c) for c in choices) if isinstance(choices, list) else (),
        requested_at=now,
        expires_at=now + timedelta(seconds=expires_in) if expires_in else None,
    )
    payload = request.payload()
    if decision.rewritten:
        payload["hook_arguments"] = _hook_arguments(payload, call)
    append(rt, ctx, EventType.HUMAN_INPUT_REQUESTED, payload, redact=False)
    ctx.asked[call.tool_call_id] = request
    return request


def record_answer(
    rt: AgentRuntime,
    ctx: _RunContext,
    request: HumanRequest,
    answer: dict[str, Any],
    *,
    by: str,
    via: str = "runtime",
) -> None:
    """HUMAN_INPUT_RECEIVED for ``request`` (an answer given in this process)."""
    payload = {
        "tool_call_id": request.tool_call_id,
        "kind": request.kind.value,
        "decision": answer.get("decision"),
        "reason": answer.get("reason"),
        "text": answer.get("text"),
        "by": by,
        "via": via,
    }
    if answer.get("expired"):
        payload["expired"] = True
    append(rt, ctx, EventType.HUMAN_INPUT_RECEIVED, payload)
    ctx.answers[request.tool_call_id] = payload


def _answer_payload(request: HumanRequest, answer: Answer) -> dict[str, Any]:
    from avo.ops.approval import answer_fits

    answer_fits(request, answer)
    return {"decision": answer.kind.value, "reason": answer.reason, "text": answer.text}


# ---------------------------------------------------------------- pausing


def waiting_requests(ctx: _RunContext) -> list[HumanRequest]:
    """This turn's requests nobody has answered yet, in the model's order."""
    return [r for call_id, r in ctx.asked.items() if call_id not in ctx.answers]


def _pause(rt: AgentRuntime, ctx: _RunContext, reason: str) -> None:
    append_with_run(
        rt,
        ctx,
        EventType.STATE_CHANGED,
        {
            "from_state": STATE_VALUE[ctx.run.state],
            "to_state": STATE_VALUE[RunState.PAUSED],
            "reason": reason,
        },
        state=RunState.PAUSED,
    )


async def pause_for_people(
    rt: AgentRuntime, ctx: _RunContext, *, back_to: RunState = RunState.APPROVAL_PENDING
) -> None:
    """Checkpoint, pause durably, then ask the answerer (if any) in the model's order.

    Returns with the run PAUSED (someone must answer elsewhere, then resume) or,
    when the answerer answered every request, back in ``back_to`` (the state it
    paused from: APPROVAL_PENDING, or TOOL_EXECUTING for a call whose effect is
    unknown, see :mod:`avo.runtime_outcomes`).
    """
    waiting = waiting_requests(ctx)
    questions = all(r.kind is RequestKind.QUESTION for r in waiting)
    await checkpoint(rt, ctx)  # at ``back_to``: resume re-enters that step
    _pause(rt, ctx, AWAITING_ANSWER if questions else AWAITING_APPROVAL)
    await flush(rt, ctx)
    await _notify(rt, ctx, waiting)
    answerer = rt.answerer or getattr(rt._approval_callback, "answerer", None)
    if answerer is None:
        return
    from avo.runtime_waiting import ask_one

    for request in waiting:
        if request.tool_call_id in ctx.answers:  # answered elsewhere while an earlier one waited
            continue
        try:
            given = answerer(request)
            if inspect.isawaitable(given):  # it may wait for a person: others may answer too
                given = await ask_one(rt, ctx, answerer, request, given)
                if given is None and request.tool_call_id in ctx.answers:
                    continue  # answered elsewhere first: that answer stands
        except (KeyboardInterrupt, EOFError):
            given = None
        if given is None:
            return  # nobody here can answer: the run stays paused
        answer = Answer.coerce(given)
        record_answer(rt, ctx, request, _answer_payload(request, answer), by=answer.by or "prompt")
        await flush(rt, ctx)
    transition(rt, ctx, back_to)


async def _notify(rt: AgentRuntime, ctx: _RunContext, waiting: list[HumanRequest]) -> None:
    if rt.hooks is None or not waiting:
        return
    lines = [f"run {ctx.run_id} waits for a person:"]
    lines += [f"- {r.tool_call_id}: {r.summary()}" for r in waiting]
    lines.append(f"answer with: avo runs approve|deny|answer {ctx.run_id}")
    decision = await rt.hooks.fire(
        HookEvent.NOTIFICATION,
        HookContext(
            HookEvent.NOTIFICATION,
            ctx.run_id,
            run=ctx.run,
            notification="\n".join(lines),
            extra={"requests": [r.payload() for r in waiting]},
        ),
    )
    if decision.faults:
        report_hook_faults(
            rt, ctx, "notification", decision.faults, outcome="ignored", run_id=ctx.run_id
        )
        await flush(rt, ctx)


# ---------------------------------------------------------------- resume


def restore_turn(rt: AgentRuntime, ctx: _RunContext, events: list[AgentEvent]) -> None:
    """Rebuild this turn's approvals, denials, requests and answers from the log (on resume).

    The approval callback's ``restore_run(run_id, events)``, if it has one, is
    given the whole log first (its per-run memory, e.g. a submitted plan).
    """
    restore = getattr(rt._approval_callback, "restore_run", None)
    if callable(restore):
        restore(ctx.run_id, events)
    start = 0
    for index in range(len(events) - 1, -1, -1):
        if events[index].event_type is EventType.MODEL_RESPONDED:
            start = index
            break
    for event in events[start:]:
        kind, payload = event.event_type, event.payload
        call_id = str(payload.get("tool_call_id", ""))
        if kind in (EventType.TOOL_APPROVED, EventType.HUMAN_INPUT_REQUESTED):
            _restore_hook_outcome(ctx, call_id, payload)
        if kind is EventType.TOOL_APPROVED:
            ctx.approved.add(call_id)
        elif kind is EventType.TOOL_DENIED:
            ctx.outcomes[call_id] = f"the tool call was denied: {payload.get('reason') or ''}"
        elif kind is EventType.HUMAN_INPUT_REQUESTED:
            ctx.asked[call_id] = HumanRequest.from_payload(
                ctx.run_id, payload, requested_at=event.created_at
            )
            ctx.answers.pop(call_id, None)  # a new request (a tool's question after approval)
        elif kind is EventType.HUMAN_INPUT_RECEIVED:
            ctx.answers[call_id] = dict(payload)


def _restore_hook_outcome(ctx: _RunContext, call_id: str, payload: Any) -> None:
    """What a pre-tool hook gave this call before the pause (see :func:`decide_call`)."""
    outcome = payload.get("hook_arguments")
    if outcome == "exact" and isinstance(payload.get("arguments"), dict):
        ctx.hook_args[call_id] = dict(payload["arguments"])
        ctx.hooks_again.discard(call_id)
    elif outcome == "redacted":
        ctx.hook_args.pop(call_id, None)
        ctx.hooks_again.add(call_id)


def record_given_answers(
    rt: AgentRuntime, ctx: _RunContext, answers: dict[str, Any]
) -> list[HumanRequest]:
    """Record ``resume(answers=...)`` (call id, or unique prefix, -> answer) on a paused run."""
    from avo.exceptions import ApprovalError
    from avo.ops.approval import pick_request

    waiting = waiting_requests(ctx)
    done = []
    for key, value in answers.items():
        answer = Answer.coerce(value)
        kind = RequestKind.QUESTION if answer.kind.value == "reply" else RequestKind.APPROVAL
        request = pick_request(ctx.run_id, waiting, key, kind)
        if request.expired(rt.clock()):
            raise ApprovalError(
                f"the request of call {request.tool_call_id} expired; it is recorded as denied",
                run_id=ctx.run_id,
                tool_call_id=request.tool_call_id,
            )
        record_answer(
            rt, ctx, request, _answer_payload(request, answer), by=answer.by or "python", via="api"
        )
        waiting = [r for r in waiting if r is not request]
        done.append(request)
    return done


__all__ = [
    "AWAITING_ANSWER",
    "AWAITING_APPROVAL",
    "CallDecision",
    "decide_call",
    "pause_for_people",
    "record_answer",
    "record_approved",
    "record_denied",
    "record_given_answers",
    "request_person",
    "restore_turn",
    "waiting_requests",
]
