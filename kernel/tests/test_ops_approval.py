"""avo.ops.approval on a hand-built paused log: who may answer what, and when."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest

from avo.approval import Answer, HumanRequest, RequestKind
from avo.events import AgentEvent, EventType
from avo.exceptions import ApprovalError, EventInvariantError, RunNotFoundError
from avo.models import RunRecord, utc_now
from avo.ops.approval import answer, answer_requests, approve, deny, pending_requests
from avo.state import RunState
from avo.storage.memory import InMemoryEventStore


def _event(event_type: EventType, **payload: Any) -> AgentEvent:
    return AgentEvent(run_id="r1", event_type=event_type, payload=payload)


def _move(a: str, b: str) -> AgentEvent:
    return _event(EventType.STATE_CHANGED, from_state=a, to_state=b)


def _request(call_id: str, kind: str = "approval", **extra: Any) -> AgentEvent:
    request = HumanRequest(
        run_id="r1",
        tool_call_id=call_id,
        kind=RequestKind(kind),
        tool_name="run_shell" if kind == "approval" else "ask_user",
        arguments={"command": "git push"} if kind == "approval" else {"question": "Which?"},
        risk="execute",
        reason="needs approval",
        question="Which?" if kind == "question" else None,
        choices=tuple(extra.pop("choices", ())),
        expires_at=extra.pop("expires_at", None),
    )
    return _event(EventType.HUMAN_INPUT_REQUESTED, **request.payload())


async def _paused_store(*requests: AgentEvent, pause: bool = True) -> InMemoryEventStore:
    store = InMemoryEventStore()
    await store.create_run(
        RunRecord(run_id="r1", task="t"), _event(EventType.RUN_CREATED, task="t")
    )
    steps = ["created", "model_pending", "decision_received", "tool_pending", "approval_pending"]
    for a, b in itertools.pairwise(steps):
        await store.append_event(_move(a, b))
    for event in requests:
        await store.append_event(event)
    if pause:  # the runtime moves the run's head with each transition
        run = RunRecord(run_id="r1", task="t", state=RunState.PAUSED)
        await store.append_event_and_update_run(_move("approval_pending", "paused"), run)
    return store


async def test_approve_the_only_request_and_list_what_is_pending() -> None:
    store = await _paused_store(_request("call-1"))
    [pending] = await pending_requests(store)
    assert (pending.tool_call_id, pending.kind, pending.tool_name) == (
        "call-1",
        RequestKind.APPROVAL,
        "run_shell",
    )
    assert pending.summary() == 'run_shell {"command": "git push"} (execute): needs approval'
    [done] = await approve(store, "r1", reason="looks fine", by="ana")
    assert done.tool_call_id == "call-1"
    received = (await store.get_events("r1"))[-1]
    assert received.event_type is EventType.HUMAN_INPUT_RECEIVED
    assert received.payload == {
        "tool_call_id": "call-1",
        "kind": "approval",
        "decision": "approve",
        "reason": "looks fine",
        "text": None,
        "by": "ana",
        "via": "api",
    }
    assert await pending_requests(store) == []
    with pytest.raises(ApprovalError, match="call-1 of run r1 was already approved by ana"):
        await approve(store, "r1")


async def test_several_waiting_calls_need_a_call_id_or_all() -> None:
    store = await _paused_store(
        _request("call-aaa"), _request("call-bbb"), _request("q-1", "question")
    )
    with pytest.raises(ApprovalError, match=r"waits for 2 approvals \(call-aaa \(run_shell\)"):
        await deny(store, "r1", reason="no")
    [denied] = await deny(store, "r1", "call-b", reason="not today")  # a unique prefix
    assert denied.tool_call_id == "call-bbb"
    with pytest.raises(ApprovalError, match="is a question request; answer it: avo runs answer"):
        await approve(store, "r1", "q-1")
    with pytest.raises(ApprovalError, match="call-bbb of run r1 was already denied by"):
        await approve(store, "r1", "call-bbb")
    approved = await approve(store, "r1", all_calls=True)
    assert [r.tool_call_id for r in approved] == ["call-aaa"]
    [replied] = await answer(store, "r1", "the blue one")
    assert replied.kind is RequestKind.QUESTION
    last = (await store.get_events("r1"))[-1].payload
    assert (last["decision"], last["text"]) == ("reply", "the blue one")


async def test_choices_expiry_and_a_run_that_does_not_wait() -> None:
    past = utc_now() - timedelta(minutes=1)
    store = await _paused_store(
        _request("q-1", "question", choices=["yes", "no"]), _request("call-1", expires_at=past)
    )
    with pytest.raises(ApprovalError, match="'maybe' is not one of the choices for call q-1"):
        await answer(store, "r1", "maybe")
    with pytest.raises(ApprovalError, match=r"expired at .*resuming the run records it as denied"):
        await approve(store, "r1", "call-1")
    # nothing was recorded by the refused answers
    assert (await store.get_events("r1"))[-1].event_type is EventType.STATE_CHANGED
    await answer_requests(store, "r1", {"q-1": Answer.reply("yes")})

    live = await _paused_store(_request("call-9"), pause=False)
    with pytest.raises(
        ApprovalError, match="is not waiting for an answer \\(it is approval_pending\\)"
    ):
        await approve(live, "r1")
    with pytest.raises(RunNotFoundError):
        await approve(live, "nope")


async def test_secrets_in_a_reason_are_masked() -> None:
    store = await _paused_store(_request("call-1"))
    await deny(store, "r1", reason="key sk-live-abcdefghijklmnop leaked", environ={})
    payload = (await store.get_events("r1"))[-1].payload
    assert payload["reason"] == "key *** leaked"


async def test_the_store_refuses_a_second_answer_even_past_the_operation() -> None:
    store = await _paused_store(_request("call-1"))
    await approve(store, "r1")
    with pytest.raises(EventInvariantError, match="already answered"):
        await store.append_event(
            _event(EventType.HUMAN_INPUT_RECEIVED, tool_call_id="call-1", decision="deny")
        )
