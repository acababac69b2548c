"""A tool that needs a person's answer mid-call: the run asks, pauses, reruns the call with it.

Each "process" is a fresh AgentRuntime over the same store (the MCP plugin's
tests drive the same path with a real MCP server's elicitation).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, RunState
from avo.approval import TOOL_INPUT, Approval, RequestKind, tool_input
from avo.exceptions import ApprovalError, ToolInputRequiredError
from avo.forms import form_content
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.ops.approval import answer, approve, deny, pending_requests
from avo.storage.memory import InMemoryEventStore
from avo.tools import FunctionTool

FORM = {
    "type": "object",
    "properties": {
        "date": {"type": "string", "format": "date"},
        "seats": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
    },
    "required": ["date"],
}


class BookArgs(BaseModel):
    place: str


def _book_tool(attempts: list[Any], *, questions: int = 1) -> FunctionTool[BookArgs]:
    def book(args: BookArgs) -> dict[str, Any]:
        given = tool_input()
        attempts.append(given)
        if given is None or len([a for a in attempts if a is not None]) > questions:
            raise ToolInputRequiredError(
                "booking needs a date", question=f"Which date at {args.place}?", schema=FORM
            )
        return {"action": given.action, "content": given.content, "reason": given.reason}

    return FunctionTool(
        name="book",
        description="Book a table.",
        arguments_model=BookArgs,
        function=book,
        risk=ToolRisk.EXECUTE,
    )


SCRIPT = [
    ModelResponse(tool_call=ToolCall(tool_call_id="c1", name="book", arguments={"place": "Ito"})),
    ModelResponse(content="booked"),
]


def _runtime(store: Any, attempts: list[Any], **kwargs: Any) -> AgentRuntime:
    kwargs.setdefault("approval_callback", lambda call: True)
    questions = kwargs.pop("questions", 1)
    return AgentRuntime(
        provider=FakeProvider(SCRIPT),
        tools=[_book_tool(attempts, questions=questions)],
        event_store=store,
        **kwargs,
    )


async def _output(store: Any, run_id: str) -> Any:
    events = await store.get_events(run_id)
    done = [e.payload for e in events if e.event_type is EventType.TOOL_COMPLETED]
    return done[-1]["result"]["output"] if done else None


async def test_the_question_pauses_the_run_and_the_answer_reaches_the_rerun() -> None:
    store, attempts = InMemoryEventStore(), []
    first = await _runtime(store, attempts).run("book", run_id="r1")
    assert first.status is RunState.PAUSED and attempts == [None]
    [request] = await pending_requests(store, "r1")
    assert (request.kind, request.rule, request.question) == (
        RequestKind.QUESTION,
        TOOL_INPUT,
        "Which date at Ito?",
    )
    assert request.schema == FORM and "date (a string, required)" in request.summary()
    assert "\n" not in request.summary()
    long = dataclasses.replace(request, question="Which date?\nIto is shut on Mondays.")
    question, shut, form = long.summary().splitlines()
    assert (question, shut) == ("question from book: Which date?", "Ito is shut on Mondays.")
    assert form.startswith("(answer a JSON object: ") and "date (a string, required)" in form
    with pytest.raises(ApprovalError, match="does not fit its form: field 'seats' must be between"):
        await answer(store, "r1", '{"date": "2026-05-01", "seats": 12}', request.tool_call_id)
    with pytest.raises(ApprovalError, match="takes a reply"):
        await approve(store, "r1", request.tool_call_id)
    await answer(store, "r1", "2026-05-01", request.tool_call_id)  # the one required field
    result = await _runtime(store, attempts).resume("r1")
    assert result.status is RunState.COMPLETED and result.output == "booked"
    assert await _output(store, "r1") == {
        "action": "accept",
        "content": {"date": "2026-05-01", "seats": 2},
        "reason": None,
    }
    assert await pending_requests(store, "r1") == []


async def test_a_denial_declines_and_an_expiry_cancels() -> None:
    store, attempts = InMemoryEventStore(), []
    await _runtime(store, attempts).run("book", run_id="r1")
    [request] = await pending_requests(store, "r1")
    await deny(store, "r1", request.tool_call_id, reason="not this week")
    await _runtime(store, attempts).resume("r1")
    assert await _output(store, "r1") == {
        "action": "decline",
        "content": None,
        "reason": "not this week",
    }


async def test_a_second_question_in_one_call_fails_it() -> None:
    store, attempts = InMemoryEventStore(), []
    await _runtime(store, attempts, questions=0).run("book", run_id="r1")
    [request] = await pending_requests(store, "r1")
    result = await _runtime(store, attempts, questions=0).resume(
        "r1", answers={request.tool_call_id: '{"date": "2026-05-01"}'}
    )
    assert result.status is RunState.COMPLETED and len(attempts) == 2
    events = await store.get_events("r1")
    [failed] = [e.payload for e in events if e.event_type is EventType.TOOL_FAILED]
    assert "asked a second question" in failed["result"]["error"]


async def test_an_approved_call_that_then_asks_pauses_again() -> None:
    store, attempts = InMemoryEventStore(), []
    ask = {"approval_callback": lambda call: Approval.ask("booking costs money")}
    first = await _runtime(store, attempts, **ask).run("book", run_id="r1")
    assert first.status is RunState.PAUSED and attempts == []
    await approve(store, "r1")
    second = await _runtime(store, attempts, **ask).resume("r1")
    assert second.status is RunState.PAUSED and attempts == [None]
    [request] = await pending_requests(store, "r1")
    assert request.rule == TOOL_INPUT
    await answer(store, "r1", '{"date": "2026-06-02", "seats": 4}', request.tool_call_id)
    third = await _runtime(store, attempts, **ask).resume("r1")
    assert third.status is RunState.COMPLETED
    assert (await _output(store, "r1"))["content"] == {"date": "2026-06-02", "seats": 4}


async def test_an_answerer_answers_in_place() -> None:
    store, attempts = InMemoryEventStore(), []
    runtime = _runtime(store, attempts, answerer=lambda request: '{"date": "2026-07-03"}')
    result = await runtime.run("book", run_id="r1")
    assert result.status is RunState.COMPLETED and len(attempts) == 2
    assert (await _output(store, "r1"))["content"] == {"date": "2026-07-03", "seats": 2}


def test_forms_read_replies_and_say_what_does_not_fit() -> None:
    one = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert form_content(one, "7") == {"n": 7}
    choice = {"type": "object", "properties": {"c": {"oneOf": [{"const": "a"}, {"const": "b"}]}}}
    assert form_content(choice, '{"c": "b"}') == {"c": "b"}
    many = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"enum": ["x", "y"]}}},
    }
    assert form_content(many, "x, y") == {"tags": ["x", "y"]}
    for schema, text, message in [
        (one, "seven", "field 'n' takes an integer"),
        (FORM, "{}", "field 'date' is required"),
        (FORM, '{"date": "May"}', "field 'date' takes a date"),
        (FORM, '{"when": 1}', "the form has no field 'when'"),
        (FORM, "{nope", "not valid JSON"),
        (FORM, "tomorrow", "field 'date' takes a date"),
        (one, "", "field .n. is required"),
        (choice, '{"c": "z"}', 'field \'c\' takes one of "a", "b"'),
        (many, '{"tags": ["z"]}', "field 'tags' takes a list of"),
    ]:
        with pytest.raises(ValueError, match=message):
            form_content(schema, text)


async def test_a_rerun_cut_off_is_an_ordinary_open_call() -> None:
    """Dying while the question waits loses nothing; dying during the rerun leaves an open
    call, which resume refuses to run blindly (the kernel's rule for a cut-off call)."""
    from avo.exceptions import UnsafeResumeError

    class Died(BaseException):
        pass

    def dies(args: BookArgs) -> None:
        if tool_input() is not None:
            raise Died  # the process "dies" in the middle of the rerun
        raise ToolInputRequiredError("needs a date", question="Which date?", schema=FORM)

    def runtime(store: Any) -> AgentRuntime:
        tool = FunctionTool(
            name="book", description="Book.", arguments_model=BookArgs, function=dies
        )
        return AgentRuntime(
            provider=FakeProvider(SCRIPT),
            tools=[tool],
            event_store=store,
            approval_callback=lambda call: True,
        )

    store = InMemoryEventStore()
    await runtime(store).run("book", run_id="r1")
    [request] = await pending_requests(store, "r1")
    await answer(store, "r1", "2026-05-01", request.tool_call_id)
    with pytest.raises(Died):
        await runtime(store).resume("r1")
    with pytest.raises(UnsafeResumeError, match=request.tool_call_id):
        await runtime(store).resume("r1")
