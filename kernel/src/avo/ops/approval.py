"""Answer a paused run's requests for a person: approve, deny, answer, list pending.

A run that needs a person (an approval the permission rules ask for, or a
question from an ``asks_human`` tool) records a HUMAN_INPUT_REQUESTED event
and pauses; the process may exit. These functions answer it from anywhere
that shares the store (the CLI's ``avo runs approve|deny|answer``, the chat
REPL, the web UI): each records one HUMAN_INPUT_RECEIVED event while
holding the run's lease, so two people answering at once cannot both win.
Continuing the run is a resume (:meth:`AgentRuntime.resume`,
:func:`avo.ops.resume`, ``avo runs resume``), which applies the answers: an
approved call runs, a denied one gets the reason as its result (the model
reads it), a reply becomes a question's result. A run an engine drives (a
Temporal workflow) gets the checked answers as a signal instead: its driver
records them and continues the run by itself.

A request past its ``expires_at`` can no longer be answered; resuming the
run records it as denied ("expired"), as the run's policy says.
"""

from __future__ import annotations

import getpass
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from avo.approval import TOOL_INPUT, Answer, AnswerKind, HumanRequest, RequestKind
from avo.engines import engine_record
from avo.events import AgentEvent, EventType, RunLogState
from avo.exceptions import ApprovalError, RunNotFoundError
from avo.models import utc_now
from avo.ops._engine import relay
from avo.ops.leases import holding_lease
from avo.redaction import Redactor
from avo.state import RunState, is_terminal


def open_requests(run_id: str, events: Iterable[AgentEvent]) -> list[HumanRequest]:
    """The requests in a run's log that no one has answered yet, oldest first."""
    asked: dict[str, HumanRequest] = {}
    for event in events:
        kind = event.event_type
        if kind is EventType.HUMAN_INPUT_REQUESTED:
            request = HumanRequest.from_payload(
                run_id, event.payload, requested_at=event.created_at
            )
            asked[request.tool_call_id] = request
        elif kind is EventType.HUMAN_INPUT_RECEIVED:
            asked.pop(str(event.payload.get("tool_call_id")), None)
    return list(asked.values())


async def pending_requests(store: Any, run_id: str | None = None) -> list[HumanRequest]:
    """Open requests of ``run_id`` (or of every paused run in ``store``), oldest first."""
    if run_id is not None:
        return open_requests(run_id, await store.get_events(run_id))
    found: list[HumanRequest] = []
    for run in await store.list_runs():
        if run.state is RunState.PAUSED:
            found.extend(open_requests(run.run_id, await store.get_events(run.run_id)))
    found.sort(key=lambda r: (r.requested_at or utc_now(), r.run_id))
    return found


def pick_request(
    run_id: str, requests: list[HumanRequest], call_id: str | None, kind: RequestKind
) -> HumanRequest:
    if call_id is not None:
        chosen = [r for r in requests if r.tool_call_id == call_id] or [
            r for r in requests if r.tool_call_id.startswith(call_id)
        ]
        if not chosen:
            waiting = ", ".join(r.tool_call_id for r in requests) or "none"
            raise ApprovalError(
                f"run {run_id} has no open request for call {call_id!r} (open: {waiting})",
                run_id=run_id,
                tool_call_id=call_id,
            )
        if len(chosen) > 1:
            ids = ", ".join(r.tool_call_id for r in chosen)
            raise ApprovalError(
                f"call id prefix {call_id!r} matches several open requests ({ids}); give more "
                "of the id",
                run_id=run_id,
                tool_call_id=call_id,
            )
        request = chosen[0]
    else:
        of_kind = [r for r in requests if r.kind is kind]
        if len(of_kind) != 1:
            what = "approval" if kind is RequestKind.APPROVAL else "question"
            if not of_kind:
                raise ApprovalError(
                    f"run {run_id} has no open {what} request"
                    + (f" (it waits for: {_listing(requests)})" if requests else ""),
                    run_id=run_id,
                )
            raise ApprovalError(
                f"run {run_id} waits for {len(of_kind)} {what}s ({_listing(of_kind)}); name "
                "the call: avo runs approve RUN_ID CALL_ID (or --all)",
                run_id=run_id,
            )
        request = of_kind[0]
    declining = request.rule == TOOL_INPUT and kind is RequestKind.APPROVAL  # deny = decline
    if request.kind is not kind and not declining:
        if request.kind is RequestKind.QUESTION:
            hint = f"answer it: avo runs answer {run_id} {request.tool_call_id} TEXT"
        else:
            hint = f"approve or deny it: avo runs approve|deny {run_id} {request.tool_call_id}"
        raise ApprovalError(
            f"call {request.tool_call_id} of run {run_id} is a {request.kind.value} request; "
            + hint,
            run_id=run_id,
            tool_call_id=request.tool_call_id,
        )
    return request


def _listing(requests: list[HumanRequest]) -> str:
    return ", ".join(f"{r.tool_call_id} ({r.tool_name})" for r in requests)


def _check_run(run_id: str, run: Any, log: RunLogState) -> None:
    if run is None:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    if is_terminal(log.state) or log.terminal:
        raise ApprovalError(
            f"run {run_id} already finished ({log.state.value}); there is nothing to answer",
            run_id=run_id,
        )
    if log.state is not RunState.PAUSED:
        raise ApprovalError(
            f"run {run_id} is not waiting for an answer (it is {log.state.value})",
            run_id=run_id,
        )


def answer_fits(request: HumanRequest, answer: Answer) -> None:
    """Raise ApprovalError unless ``answer`` can answer ``request`` (kind, choices, form)."""
    if request.rule == TOOL_INPUT and answer.kind is AnswerKind.DENY:
        return  # a tool's question may be declined
    wanted = AnswerKind.REPLY if request.kind is RequestKind.QUESTION else None
    if (answer.kind is AnswerKind.REPLY) != (wanted is AnswerKind.REPLY):
        expected = "a reply (text)" if wanted else "approve or deny"
        raise ApprovalError(
            f"call {request.tool_call_id} of run {request.run_id} is a {request.kind.value} "
            f"request; it takes {expected}",
            run_id=request.run_id,
            tool_call_id=request.tool_call_id,
        )
    if request.kind is RequestKind.QUESTION:
        text = answer.text or ""
        if request.schema is not None:
            from avo.forms import form_content

            try:
                form_content(request.schema, text)
            except ValueError as exc:
                raise ApprovalError(
                    f"the answer to call {request.tool_call_id} does not fit its form: {exc}",
                    run_id=request.run_id,
                    tool_call_id=request.tool_call_id,
                ) from None
        if request.choices and text not in request.choices:
            raise ApprovalError(
                f"{text!r} is not one of the choices for call {request.tool_call_id}: "
                + ", ".join(repr(c) for c in request.choices),
                run_id=request.run_id,
                tool_call_id=request.tool_call_id,
            )


def _payload(request: HumanRequest, answer: Answer, redactor: Redactor, via: str) -> dict[str, Any]:
    answer_fits(request, answer)
    return {
        "tool_call_id": request.tool_call_id,
        "kind": request.kind.value,
        "decision": answer.kind.value,
        "reason": redactor.text(answer.reason) if answer.reason else None,
        "text": redactor.text(answer.text) if answer.text is not None else None,
        "by": answer.by or _user(),
        "via": via,
    }


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without a passwd entry)
        return "unknown"


async def answer_requests(
    store: Any,
    run_id: str,
    answers: Mapping[str, Answer],
    *,
    via: str = "api",
    owner: str | None = None,
    environ: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> list[HumanRequest]:
    """Record ``answers`` (by call id) to ``run_id``'s open requests, atomically under its lease.

    Raises :class:`ApprovalError` (nothing recorded) when the run is not paused,
    a call has no open request, a request expired, or an answer does not fit
    its request (a reply to an approval, a text outside the choices). For a
    run an engine drives (avo.engines) the checked answers are relayed to the
    engine as a signal: its driver records them and continues the run.
    """
    redactor = Redactor(environ=environ)
    async with holding_lease(store, run_id, owner=owner, doing="answer") as writer:
        run = await writer.get_run(run_id)
        events = await writer.get_events(run_id)
        log = RunLogState.from_events(run_id, events)
        _check_run(run_id, run, log)
        requests = open_requests(run_id, events)
        moment = now or utc_now()
        planned: list[tuple[HumanRequest, dict[str, Any]]] = []
        for call_id, answer in answers.items():
            kind = RequestKind.QUESTION if answer.kind is AnswerKind.REPLY else RequestKind.APPROVAL
            request = pick_request(run_id, requests, call_id, kind)
            if request.expired(moment):
                assert request.expires_at is not None
                raise ApprovalError(
                    f"the request of call {request.tool_call_id} ({request.tool_name}) expired "
                    f"at {request.expires_at:%Y-%m-%d %H:%M:%S %Z}; resuming the run records it "
                    "as denied",
                    run_id=run_id,
                    tool_call_id=request.tool_call_id,
                )
            planned.append((request, _payload(request, answer, redactor, via)))
        record = engine_record(events)
        if record is not None:  # its driver records them (it is the run's only writer)
            given = {request.tool_call_id: payload for request, payload in planned}
            await relay(record, run_id, "answer", {"answers": given}, environ=environ)
            return [request for request, _ in planned]
        for _, payload in planned:
            event = AgentEvent(
                run_id=run_id,
                event_type=EventType.HUMAN_INPUT_RECEIVED,
                created_at=moment,
                payload=payload,
            )
            await writer.append_event(event)
        return [request for request, _ in planned]


def answered_already(
    run_id: str, events: list[AgentEvent], call_id: str | None, kind: RequestKind
) -> dict[str, Any] | None:
    """The recorded answer an answer to ``call_id`` (None: the run's only request) came
    too late for: the call's (or, with no open request left, the latest ``kind``) answer."""
    if open_requests(run_id, events) and call_id is None:
        return None
    for event in reversed(events):
        if event.event_type is not EventType.HUMAN_INPUT_RECEIVED:
            continue
        answered = str(event.payload.get("tool_call_id", ""))
        if call_id is not None and not answered.startswith(call_id):
            continue
        if call_id is None and event.payload.get("kind") != kind.value:
            return None
        return dict(event.payload)
    return None


async def _answer_one(
    store: Any,
    run_id: str,
    call_id: str | None,
    answer: Answer,
    kind: RequestKind,
    **options: Any,
) -> list[HumanRequest]:
    """Answer one request (or ``all_calls``); an answer that comes too late says who won."""
    from avo.exceptions import RunBusyError
    from avo.runtime_waiting import describe

    try:
        return await _answer(store, run_id, call_id, answer, kind, **options)
    except (ApprovalError, RunBusyError):
        events = await store.get_events(run_id)
        if any(r.tool_call_id == call_id for r in open_requests(run_id, events)):
            raise
        done = answered_already(run_id, events, call_id, kind)
        if done is None:
            raise
        raise ApprovalError(
            f"call {done.get('tool_call_id')} of run {run_id} was already {describe(done)}; "
            "this answer was not recorded",
            run_id=run_id,
            tool_call_id=str(done.get("tool_call_id")),
        ) from None


async def _answer(
    store: Any,
    run_id: str,
    call_id: str | None,
    answer: Answer,
    kind: RequestKind,
    *,
    all_calls: bool = False,
    **options: Any,
) -> list[HumanRequest]:
    if call_id is None:
        events = await store.get_events(run_id)
        _check_run(run_id, await store.get_run(run_id), RunLogState.from_events(run_id, events))
        requests = open_requests(run_id, events)
        if all_calls:
            chosen = [r for r in requests if r.kind is kind]
            if not chosen:
                pick_request(run_id, requests, None, kind)  # raises the "no open request" error
        else:
            chosen = [pick_request(run_id, requests, None, kind)]
        ids = [r.tool_call_id for r in chosen]
    else:
        ids = [call_id]
    return await answer_requests(store, run_id, dict.fromkeys(ids, answer), **options)


async def approve(
    store: Any,
    run_id: str,
    call_id: str | None = None,
    *,
    reason: str | None = None,
    by: str | None = None,
    all_calls: bool = False,
    **options: Any,
) -> list[HumanRequest]:
    """Approve the call ``call_id`` (or the run's only approval request; ``all_calls``: all)."""
    answer = Answer.approve(reason, by=by)
    return await _answer_one(
        store, run_id, call_id, answer, RequestKind.APPROVAL, all_calls=all_calls, **options
    )


async def deny(
    store: Any,
    run_id: str,
    call_id: str | None = None,
    *,
    reason: str | None = None,
    by: str | None = None,
    all_calls: bool = False,
    **options: Any,
) -> list[HumanRequest]:
    """Deny the call; ``reason`` goes back to the model as the call's result."""
    answer = Answer.deny(reason, by=by)
    return await _answer_one(
        store, run_id, call_id, answer, RequestKind.APPROVAL, all_calls=all_calls, **options
    )


async def answer(
    store: Any,
    run_id: str,
    text: str,
    call_id: str | None = None,
    *,
    by: str | None = None,
    **options: Any,
) -> list[HumanRequest]:
    """Answer a question; ``text`` becomes the asking call's result."""
    return await _answer_one(
        store, run_id, call_id, Answer.reply(text, by=by), RequestKind.QUESTION, **options
    )


__all__ = [
    "answer",
    "answer_fits",
    "answered_already",
    "answer_requests",
    "approve",
    "deny",
    "open_requests",
    "pending_requests",
    "pick_request",
]
