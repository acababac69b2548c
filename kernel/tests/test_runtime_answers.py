"""Why the model stopped: truncated answers continue or stop, refusals stop, schemas validate."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, LoopPolicy, RunState
from avo.events import AgentEvent, RunLogState, validate_event_append
from avo.exceptions import ConfigError, EventInvariantError, UnsafeResumeError
from avo.models import FinishReason, ModelRequest, ModelResponse
from avo.runtime_answers import CONTINUE_PROMPT
from avo.state import StopReason
from avo.storage.memory import InMemoryEventStore


def cut(text: str) -> ModelResponse:
    return ModelResponse(content=text, finish_reason=FinishReason.LENGTH)


async def run(
    script: list[Any], **kwargs: Any
) -> tuple[Any, list[AgentEvent], AgentRuntime, FakeProvider]:
    provider = FakeProvider(script)
    store = InMemoryEventStore()
    output_schema = kwargs.pop("output_schema", None)
    runtime = AgentRuntime(provider=provider, event_store=store, **kwargs)
    result = await runtime.run("write", output_schema=output_schema)
    return result, await store.get_events(result.run_id), runtime, provider


async def test_a_truncated_answer_is_continued_and_joined() -> None:
    script = [cut("Once upon "), cut("a time "), ModelResponse(content="the end.")]
    result, events, _, provider = await run(script)
    assert (result.status, result.output) == (RunState.COMPLETED, "Once upon a time the end.")
    assert result.steps == 3
    last = provider.requests[-1].messages
    assert [m["role"] for m in last[-4:]] == ["assistant", "user", "assistant", "user"]
    assert last[-1]["content"] == CONTINUE_PROMPT and last[-2]["content"] == "a time "
    moves = [
        (e.payload["from_state"], e.payload["to_state"])
        for e in events
        if e.event_type is EventType.STATE_CHANGED
    ]
    assert moves.count(("decision_received", "model_pending")) == 2
    finishes = [
        e.payload["response"]["finish_reason"]
        for e in events
        if e.event_type is EventType.MODEL_RESPONDED
    ]
    assert finishes == ["length", "length", "stop"]


async def test_a_truncated_answer_past_the_continuations_stops_keeping_the_text() -> None:
    script = [cut("part one, "), cut("part two")]
    result, events, _, _ = await run(script, policy=LoopPolicy(continuation_turns=1))
    assert (result.status, result.stop_reason) == (RunState.STOPPED, StopReason.OUTPUT_TRUNCATED)
    assert result.output == "part one, part two"
    assert result.error is not None and "after 1 continuation turn(s)" in result.error
    assert events[-1].event_type is EventType.RUN_STOPPED
    assert events[-1].payload["stop_reason"] == "output_truncated"


async def test_no_continuation_turns_stops_at_the_first_cut() -> None:
    result, _, _, _ = await run([cut("half")], policy=LoopPolicy(continuation_turns=0))
    assert (result.stop_reason, result.output) == (StopReason.OUTPUT_TRUNCATED, "half")


@pytest.mark.parametrize(
    ("finish", "why"),
    [
        (FinishReason.REFUSAL, "the model declined to answer"),
        (FinishReason.CONTENT_FILTER, "the vendor's content filter withheld the answer"),
    ],
)
async def test_a_refusal_stops_with_its_own_reason(finish: FinishReason, why: str) -> None:
    script = [ModelResponse(content="I can't help with that.", finish_reason=finish)]
    result, _, _, _ = await run(script)
    assert (result.status, result.stop_reason) == (RunState.STOPPED, StopReason.MODEL_REFUSED)
    assert result.output == "I can't help with that."
    assert result.error == f"Run stopped: {why} (finish_reason={finish.value})."


async def test_unknown_finish_reasons_complete() -> None:
    script = [ModelResponse(content="fine", finish_reason=FinishReason.UNKNOWN)]
    result, _, _, _ = await run(script)
    assert (result.status, result.output) == (RunState.COMPLETED, "fine")


def test_a_model_outcome_stop_needs_a_model_response() -> None:
    log = RunLogState(run_id="r")
    validate_event_append(log, AgentEvent(run_id="r", event_type=EventType.RUN_CREATED))
    log.apply(AgentEvent(run_id="r", sequence=1, event_type=EventType.RUN_CREATED))
    for reason in ("output_truncated", "model_refused"):
        stop = AgentEvent(
            run_id="r",
            event_type=EventType.RUN_STOPPED,
            payload={"state": "stopped", "stop_reason": reason},
        )
        with pytest.raises(EventInvariantError, match=f"{reason} requires a prior model_responded"):
            validate_event_append(log, stop)
    log.model_responded = True
    validate_event_append(log, stop)


# ------------------------------------------------------------------ output schemas


class Weather(BaseModel):
    city: str
    celsius: float


class SchemaProvider(FakeProvider):
    """A scripted provider that declares JSON-schema output."""

    supports_output_schema = True


async def test_structured_output_is_parsed() -> None:
    script = [ModelResponse(content='```json\n{"city": "Paris", "celsius": 21.5}\n```')]
    result, events, _, provider = await run(script, output_schema=Weather)
    assert result.status is RunState.COMPLETED
    assert result.parsed == Weather(city="Paris", celsius=21.5)
    # no JSON mode declared: the schema goes in as a system instruction
    [request] = provider.requests
    assert request.output_schema is None
    instruction = request.messages[0]
    assert instruction["role"] == "system" and '"celsius"' in str(instruction["content"])
    assert events[0].payload["output_schema"]["title"] == "Weather"


async def test_a_provider_with_json_mode_gets_the_schema_on_the_request() -> None:
    provider = SchemaProvider([ModelResponse(content='{"city": "Oslo", "celsius": -3}')])
    runtime = AgentRuntime(provider=provider)
    result = await runtime.run("weather", output_schema=Weather)
    assert result.parsed == Weather(city="Oslo", celsius=-3)
    [request] = provider.requests
    assert isinstance(request, ModelRequest)
    assert [m["role"] for m in request.messages] == ["user"]
    schema = request.output_schema
    assert schema is not None and schema["title"] == "Weather"
    assert schema["required"] == ["city", "celsius"] and schema["additionalProperties"] is False


async def test_an_answer_off_schema_is_sent_back_then_fixed() -> None:
    script = [
        ModelResponse(content="It is sunny in Paris."),
        ModelResponse(content='{"city": "Paris"}'),
        ModelResponse(content='{"city": "Paris", "celsius": 20}'),
    ]
    result, events, _, provider = await run(script, output_schema=Weather)
    assert result.parsed == Weather(city="Paris", celsius=20) and result.steps == 3
    feedback = [m["content"] for m in provider.requests[-1].messages if m["role"] == "user"][1:]
    assert "the answer is not JSON" in str(feedback[0])
    assert "celsius: Field required" in str(feedback[1])
    failures = [e.payload for e in events if e.event_type is EventType.MODEL_FAILED]
    assert [f["error_type"] for f in failures] == ["OutputSchemaError"] * 2


async def test_an_answer_off_schema_after_the_retries_fails_the_run() -> None:
    script = [ModelResponse(content="no"), ModelResponse(content="[1]")]
    result, _, _, _ = await run(script, output_schema=Weather, policy=LoopPolicy(output_retries=1))
    assert (result.status, result.stop_reason) == (
        RunState.FAILED,
        StopReason.INVALID_MODEL_RESPONSE,
    )
    assert result.output == "[1]" and result.parsed is None
    assert result.error is not None
    assert result.error.startswith(
        "Invalid model response: the final answer does not match Weather after 2 answer(s)"
    )


async def test_output_schema_must_be_a_model() -> None:
    runtime = AgentRuntime(provider=FakeProvider([ModelResponse(content="x")]))
    with pytest.raises(ConfigError, match="output_schema must be a pydantic BaseModel subclass"):
        await runtime.run("x", output_schema=dict)


async def test_resume_needs_the_same_output_schema() -> None:
    class Crash(BaseException):
        pass

    class Other(BaseModel):
        n: int

    store = InMemoryEventStore()
    provider = FakeProvider([Crash()])
    with pytest.raises(Crash):
        await AgentRuntime(provider=provider, event_store=store).run(
            "w", run_id="r", output_schema=Weather
        )
    # the restarted process's model answers (the checkpointed cursor is 0)
    answer = ModelResponse(content='{"city": "Rome", "celsius": 30}')
    again = AgentRuntime(provider=FakeProvider([answer]), event_store=store)
    with pytest.raises(UnsafeResumeError, match="pass the same model"):
        await again.resume("r")
    with pytest.raises(UnsafeResumeError, match="differs from the one it was started with"):
        await again.resume("r", output_schema=Other)
    result = await again.resume("r", output_schema=Weather)
    assert result.parsed == Weather(city="Rome", celsius=30)
