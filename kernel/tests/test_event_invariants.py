"""The six append-time invariants, enforced by the in-memory store and the kernel."""

from __future__ import annotations

from typing import Any

import pytest

from avo import AgentEvent, EventType, RunRecord
from avo.events import TERMINAL_EVENT_TYPES, RunLogState, validate_event_append
from avo.exceptions import EventInvariantError, RunNotFoundError, StorageError
from avo.storage.memory import InMemoryEventStore


def ev(kind: EventType, run_id: str = "r1", **payload: Any) -> AgentEvent:
    return AgentEvent(run_id=run_id, event_type=kind, payload=payload)


def sc(a: str, b: str) -> AgentEvent:
    return ev(EventType.STATE_CHANGED, from_state=a, to_state=b)


def terminal(kind: EventType, state: str, reason: str) -> AgentEvent:
    return ev(
        kind,
        state=state,
        stop_reason=reason,
        output=None,
        error=None,
        steps=1,
        token_usage={"input_tokens": 0, "output_tokens": 0},
        token_accounting_available=True,
    )


async def new_store() -> InMemoryEventStore:
    store = InMemoryEventStore()
    await store.create_run(RunRecord(run_id="r1", task="t"), ev(EventType.RUN_CREATED, task="t"))
    return store


REFERENCE_EVENT_TYPES = [
    *("run_created", "state_changed", "model_requested", "model_responded", "model_failed"),
    *("route_failover", "saver_applied", "tool_requested", "tool_approval_requested"),
    *("tool_approved", "tool_denied", "tool_started", "tool_completed", "tool_failed"),
    *("policy_triggered", "checkpoint_created", "run_resumed", "run_completed", "run_failed"),
    *("run_stopped", "run_cancelled"),
]


def test_event_type_lists_the_21_reference_members() -> None:
    assert len(REFERENCE_EVENT_TYPES) == 21
    assert [t.value for t in EventType][:21] == REFERENCE_EVENT_TYPES
    # avo's documented additions come after the reference's members
    additions = {"hook_failed", "request_shaped", "context_compacted", "run_steered"}
    additions |= {"human_input_requested", "human_input_received"}  # the durable pause
    additions |= {"tool_progress"}  # a running tool's progress (a note)
    assert {t.value for t in EventType} - set(REFERENCE_EVENT_TYPES) == additions
    assert {t.value for t in TERMINAL_EVENT_TYPES} == {
        "run_completed",
        "run_failed",
        "run_stopped",
        "run_cancelled",
    }


async def test_first_event_must_be_run_created_and_only_once() -> None:
    log = RunLogState(run_id="r1")
    with pytest.raises(EventInvariantError, match="first event must be run_created"):
        validate_event_append(log, sc("created", "model_pending"))
    store = await new_store()
    with pytest.raises(EventInvariantError, match="only once"):
        await store.append_event(ev(EventType.RUN_CREATED, task="again"))
    with pytest.raises(EventInvariantError, match="run_created"):
        await InMemoryEventStore().create_run(
            RunRecord(run_id="r2", task="t"), ev(EventType.STATE_CHANGED, run_id="r2")
        )


async def test_sequences_ascend_per_run() -> None:
    store = await new_store()
    e2 = await store.append_event(sc("created", "model_pending"))
    e3 = await store.append_event(ev(EventType.MODEL_REQUESTED, step=1))
    assert [e.sequence for e in await store.get_events("r1")] == [1, 2, 3]
    assert (e2.sequence, e3.sequence) == (2, 3)


async def test_nothing_after_a_terminal_event_and_log_unchanged() -> None:
    store = await new_store()
    await store.append_event(sc("created", "failed"))
    await store.append_event(terminal(EventType.RUN_FAILED, "failed", "internal_error"))
    before = await store.get_events("r1")
    with pytest.raises(EventInvariantError, match="after a terminal event"):
        await store.append_event(ev(EventType.MODEL_REQUESTED))
    assert await store.get_events("r1") == before
    assert await store.is_terminal_run("r1")


async def test_state_changed_must_be_legal_from_the_current_state() -> None:
    store = await new_store()
    with pytest.raises(EventInvariantError, match="invalid state transition"):
        await store.append_event(sc("created", "tool_executing"))
    with pytest.raises(EventInvariantError, match="the run is in created"):
        await store.append_event(sc("model_pending", "decision_received"))
    with pytest.raises(EventInvariantError, match="known from_state"):
        await store.append_event(sc("created", "running"))
    assert len(await store.get_events("r1")) == 1


async def test_tool_results_need_a_started_call_and_only_one_result() -> None:
    store = await new_store()
    with pytest.raises(EventInvariantError, match="without tool_started"):
        await store.append_event(ev(EventType.TOOL_COMPLETED, tool_call_id="c1"))
    await store.append_event(ev(EventType.TOOL_STARTED, tool_call_id="c1"))
    await store.append_event(ev(EventType.TOOL_COMPLETED, tool_call_id="c1"))
    with pytest.raises(EventInvariantError, match="already has a result"):
        await store.append_event(ev(EventType.TOOL_FAILED, tool_call_id="c1"))


async def test_terminal_events_need_an_agreeing_outcome() -> None:
    store = await new_store()
    await store.append_event(sc("created", "failed"))
    with pytest.raises(EventInvariantError, match="invalid outcome"):
        await store.append_event(terminal(EventType.RUN_FAILED, "failed", "max_steps"))
    with pytest.raises(EventInvariantError, match="cannot carry state"):
        await store.append_event(terminal(EventType.RUN_STOPPED, "failed", "internal_error"))


async def test_run_completed_requires_a_model_response() -> None:
    store = await new_store()
    with pytest.raises(EventInvariantError, match="prior model_responded"):
        await store.append_event(terminal(EventType.RUN_COMPLETED, "completed", "completed"))
    await store.append_event(ev(EventType.MODEL_RESPONDED, step=1))
    await store.append_event(terminal(EventType.RUN_COMPLETED, "completed", "completed"))


async def test_finalize_is_all_or_nothing() -> None:
    store = await new_store()
    run = RunRecord(run_id="r1", task="t")
    bad_terminal = terminal(EventType.RUN_STOPPED, "stopped", "provider_error")
    with pytest.raises(EventInvariantError):
        await store.finalize_run(run, sc("created", "failed"), bad_terminal)
    assert len(await store.get_events("r1")) == 1
    assert not await store.is_terminal_run("r1")


async def test_unknown_run_and_duplicate_run() -> None:
    store = await new_store()
    with pytest.raises(RunNotFoundError):
        await store.append_event(ev(EventType.MODEL_REQUESTED, run_id="nope"))
    with pytest.raises(StorageError, match="already exists"):
        await store.create_run(RunRecord(run_id="r1", task="t"), ev(EventType.RUN_CREATED))


async def test_delete_run_only_when_finished() -> None:
    store = await new_store()
    with pytest.raises(StorageError, match="not finished"):
        await store.delete_run("r1")
    await store.append_event(sc("created", "cancelled"))
    await store.append_event(terminal(EventType.RUN_CANCELLED, "cancelled", "user_cancelled"))
    assert await store.delete_run("r1")
    assert await store.get_run("r1") is None
    assert not await store.delete_run("r1")


def _both(events: list[AgentEvent]) -> list[tuple[str, Any]]:
    """Feed ``events`` to accept() and to validate+apply; record each outcome."""
    fast, slow = RunLogState(run_id="r1"), RunLogState(run_id="r1")
    outcomes: list[tuple[str, Any]] = []
    for n, event in enumerate(events, start=1):
        event = event.model_copy(update={"sequence": n})
        results = []
        for state, step in ((fast, "accept"), (slow, "validate")):
            try:
                if step == "accept":
                    state.accept(event)
                else:
                    validate_event_append(state, event)
                    state.apply(event)
                results.append(("ok", None))
            except EventInvariantError as exc:
                results.append(("refused", str(exc)))
        assert results[0] == results[1], (event, results)
        assert fast == slow
        outcomes.append(results[0])
    return outcomes


def test_accept_is_validate_then_apply() -> None:
    created = ev(EventType.RUN_CREATED, task="t")
    events = [
        sc("created", "model_pending"),  # before run_created
        created,
        created,  # twice
        sc("created", "model_pending"),
        sc("created", "model_pending"),  # from the wrong state
        sc("model_pending", "completed"),  # illegal move
        ev(EventType.STATE_CHANGED, from_state=["x"], to_state="y"),  # unhashable
        ev(EventType.STATE_CHANGED, from_state="model_pending"),  # missing to_state
        ev(EventType.MODEL_RESPONDED, step=1),
        ev(EventType.CHECKPOINT_CREATED, checkpoint_id="c", state="model_pending", next_step=2),
        ev(EventType.TOOL_COMPLETED, tool_call_id="c1"),  # no start
        ev(EventType.TOOL_STARTED, tool_call_id="c1"),
        ev(EventType.TOOL_COMPLETED, tool_call_id="c1"),
        ev(EventType.TOOL_FAILED, tool_call_id="c1"),  # second result
        ev(EventType.MODEL_REQUESTED, run_id="r2"),  # another run
        sc("model_pending", "decision_received"),
        terminal(EventType.RUN_FAILED, "completed", "completed"),  # wrong kind
        sc("decision_received", "completed"),
        terminal(EventType.RUN_COMPLETED, "completed", "completed"),
        ev(EventType.MODEL_REQUESTED),  # after terminal
        sc("completed", "model_pending"),  # after terminal
    ]
    outcomes = _both(events)
    assert [kind for kind, _ in outcomes].count("ok") == 9


async def test_a_person_is_asked_once_and_answered_once_while_the_run_waits() -> None:
    store = await new_store()

    def ask(**payload: Any) -> AgentEvent:
        return AgentEvent(run_id="r1", event_type=EventType.HUMAN_INPUT_REQUESTED, payload=payload)

    answered = EventType.HUMAN_INPUT_RECEIVED
    with pytest.raises(EventInvariantError, match="requires a tool_call_id"):
        await store.append_event(ask(kind="approval"))
    with pytest.raises(EventInvariantError, match="kind must be 'approval' or 'question'"):
        await store.append_event(ask(tool_call_id="c1", kind="vibes"))
    with pytest.raises(EventInvariantError, match="which asked nobody"):
        await store.append_event(ev(answered, tool_call_id="c1", decision="approve"))
    for a, b in [("created", "model_pending"), ("model_pending", "decision_received")]:
        await store.append_event(sc(a, b))
    for a, b in [("decision_received", "tool_pending"), ("tool_pending", "approval_pending")]:
        await store.append_event(sc(a, b))
    await store.append_event(ask(tool_call_id="c1", kind="approval"))
    with pytest.raises(EventInvariantError, match="already asked a person"):
        await store.append_event(ask(tool_call_id="c1", kind="approval"))
    await store.append_event(sc("approval_pending", "paused"))
    await store.append_event(ev(answered, tool_call_id="c1", decision="approve"))
    with pytest.raises(EventInvariantError, match="already answered"):
        await store.append_event(ev(answered, tool_call_id="c1", decision="deny"))
    await store.append_event(sc("paused", "approval_pending"))
    await store.append_event(sc("approval_pending", "tool_executing"))
    await store.append_event(ask(tool_call_id="c2", kind="question"))
    with pytest.raises(EventInvariantError, match="only while the run waits for it"):
        await store.append_event(ev(answered, tool_call_id="c2", text="yes"))
    log = RunLogState.from_events("r1", await store.get_events("r1"))
    assert log.open_inputs == {"c2"} and log.answered_inputs == {"c1"}
    assert log.copy().open_inputs == {"c2"}
