"""Messages both ways, LangChain tools as avo tools, avo providers as LangChain chat models."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool, ToolException, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from avo.exceptions import ConfigError, ProviderError, ToolExecutionError
from avo.models import FinishReason, ModelResponse, TokenUsage, ToolCall
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo_langchain import (
    AvoLangChainModel,
    avo_messages_from_lc,
    avo_tool_from_lc,
    from_langchain_ai_message,
    from_langchain_messages,
    to_langchain_ai_message,
    to_langchain_messages,
)

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2 + 3?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call-1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call-1", "name": "add", "content": "5"},
    {"role": "assistant", "content": "5"},
]


class Weather(BaseModel):
    """Weather for a city."""

    city: str = Field(description="the city's name")
    unit: str = Field(default="celsius", description="celsius or fahrenheit")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# ------------------------------------------------------------------ messages


def test_a_transcript_survives_the_round_trip() -> None:
    lc = to_langchain_messages(TRANSCRIPT)
    assert [type(m) for m in lc] == [SystemMessage, HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert lc[2].tool_calls == [
        {"name": "add", "args": {"a": 2, "b": 3}, "id": "call-1", "type": "tool_call"}
    ]
    assert isinstance(lc[3], ToolMessage) and lc[3].tool_call_id == "call-1"
    back = from_langchain_messages(lc)
    assert avo_messages_from_lc(lc) == back  # the API reference's name for it
    assert back[:2] == TRANSCRIPT[:2]
    assert back[2]["tool_calls"][0]["id"] == "call-1"  # type: ignore[index]
    assert json.loads(back[2]["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}  # type: ignore[index]
    assert back[3] == TRANSCRIPT[3]
    assert back[4] == TRANSCRIPT[4]


def test_vendor_ids_name_the_calls_on_the_langchain_side() -> None:
    call = {**TRANSCRIPT[2]["tool_calls"][0], "vendor_id": "v9"}
    message = {**TRANSCRIPT[2], "tool_calls": [call]}
    result = {**TRANSCRIPT[3], "vendor_id": "v9"}
    ai, answer = to_langchain_messages([message, result])
    assert ai.tool_calls[0]["id"] == "v9"  # type: ignore[attr-defined]
    assert answer.tool_call_id == "v9"  # type: ignore[attr-defined]


def test_responses_both_ways_keep_calls_usage_and_finish_reason() -> None:
    response = ModelResponse(
        tool_calls=[ToolCall(name="add", arguments={"a": 1, "b": 2}, vendor_id="toolu_1")],
        usage=TokenUsage(input_tokens=11, output_tokens=4),
        finish_reason=FinishReason.TOOL_CALLS,
    )
    message = to_langchain_ai_message(response, model="m")
    assert message.tool_calls[0]["id"] == "toolu_1"
    assert message.usage_metadata == {"input_tokens": 11, "output_tokens": 4, "total_tokens": 15}
    assert message.response_metadata == {"finish_reason": "tool_calls", "model_name": "m"}
    back = from_langchain_ai_message(message)
    assert back.tool_calls[0].name == "add" and back.tool_calls[0].vendor_id == "toolu_1"
    assert back.tool_calls[0].arguments == {"a": 1, "b": 2}
    assert back.usage == response.usage and back.finish_reason is FinishReason.TOOL_CALLS
    text = from_langchain_ai_message(
        AIMessage(
            content=[{"type": "text", "text": "Hel"}, "lo"],
            response_metadata={"stop_reason": "max_tokens"},
        )
    )
    assert text.content == "Hello" and text.finish_reason is FinishReason.LENGTH


def test_bad_messages_are_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match="role None; expected system, user, assistant or tool"):
        to_langchain_messages([{"content": "no role"}])
    with pytest.raises(ConfigError, match="not JSON"):
        to_langchain_messages(
            [{"role": "assistant", "tool_calls": [{"id": "x", "function": {"arguments": "{x"}}]}]
        )
    with pytest.raises(ProviderError, match="cannot read"):
        from_langchain_ai_message(
            AIMessage(
                content="",
                invalid_tool_calls=[
                    {"name": "f", "args": "{", "id": "1", "error": "bad json"}  # type: ignore[typeddict-item]
                ],
            )
        )


# ------------------------------------------------------------------ tools


async def test_a_langchain_tool_keeps_its_schema_and_runs() -> None:
    weather = StructuredTool.from_function(
        func=lambda city, unit="celsius": f"12 degrees {unit} in {city}",
        name="weather",
        description="Current weather for a city.",
        args_schema=Weather,
    )
    made = avo_tool_from_lc(weather, risk="inspect", argument_kinds={"city": "text"})
    expected = convert_to_openai_tool(weather)["function"]
    assert made.metadata.name == "weather"
    assert made.metadata.description == expected["description"]
    assert made.metadata.input_schema == expected["parameters"]
    assert made.metadata.input_schema["properties"]["city"]["description"] == "the city's name"  # type: ignore[index]
    assert made.metadata.effective_risk.value == "inspect"
    assert await made.invoke({"city": "Oslo"}) == "12 degrees celsius in Oslo"
    assert await avo_tool_from_lc(add).invoke({"a": 2, "b": 40}) == 42


async def test_a_failing_langchain_tool_fails_the_call_or_answers_its_handler() -> None:
    def broken(text: str) -> str:
        raise ToolException(f"cannot parse {text}")

    strict = StructuredTool.from_function(func=broken, name="parse", description="Parse text.")
    with pytest.raises(ToolExecutionError, match="LangChain tool 'parse' failed: ToolException"):
        await avo_tool_from_lc(strict).invoke({"text": "x"})
    handled = StructuredTool.from_function(
        func=broken, name="parse", description="Parse text.", handle_tool_error=True
    )
    assert await avo_tool_from_lc(handled).invoke({"text": "x"}) == "cannot parse x"
    with pytest.raises(ConfigError, match="risk 'risky' is unknown; use inspect, modify, execute"):
        avo_tool_from_lc(strict, risk="risky")
    with pytest.raises(ConfigError, match="needs a LangChain BaseTool, got function"):
        avo_tool_from_lc(broken)  # type: ignore[arg-type]


async def test_a_langchain_tool_inside_an_avo_run() -> None:
    provider = FakeProvider(
        [
            ModelResponse(tool_call=ToolCall(name="add", arguments={"a": 2, "b": 3})),
            ModelResponse(content="2 + 3 = 5"),
        ]
    )
    runtime = AgentRuntime(provider=provider, tools=[avo_tool_from_lc(add)])
    result = await runtime.run("What is 2 + 3?")
    assert result.status is RunState.COMPLETED and result.output == "2 + 3 = 5"
    assert (
        provider.requests[0].tools[0].input_schema
        == convert_to_openai_tool(add)["function"]["parameters"]
    )
    tool_message = provider.requests[1].messages[-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "5"


# ------------------------------------------------------------------ avo provider as a chat model


def _model(*script: Any, **options: Any) -> tuple[AvoLangChainModel, FakeProvider]:
    provider = FakeProvider(list(script))
    return AvoLangChainModel(provider=provider, **options), provider


async def test_the_chat_model_calls_tools_and_reads_their_results() -> None:
    model, provider = _model(
        ModelResponse(
            tool_call=ToolCall(name="add", arguments={"a": 2, "b": 3}),
            usage=TokenUsage(input_tokens=7, output_tokens=3),
        ),
        ModelResponse(content="5"),
    )
    bound = model.bind_tools([add, Weather])
    first = await bound.ainvoke([HumanMessage("What is 2 + 3?")])
    assert isinstance(first, AIMessage)
    assert first.tool_calls[0]["name"] == "add" and first.tool_calls[0]["args"] == {"a": 2, "b": 3}
    assert first.usage_metadata is not None and first.usage_metadata["total_tokens"] == 10
    sent = provider.requests[0]
    assert [t.name for t in sent.tools] == ["add", "Weather"]
    assert sent.tools[1].input_schema == convert_to_openai_tool(Weather)["function"]["parameters"]
    result = add.invoke(first.tool_calls[0])
    second = bound.invoke([HumanMessage("What is 2 + 3?"), first, result])  # the sync API too
    assert second.content == "5"
    assert provider.requests[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": first.tool_calls[0]["id"],
        "name": "add",
        "content": "5",
    }


async def test_tool_choice_narrows_what_the_provider_is_shown() -> None:
    model, provider = _model(ModelResponse(content="ok"), ModelResponse(content="ok"))
    await model.bind_tools([add, Weather], tool_choice="Weather").ainvoke("hi")
    await model.bind_tools([add, Weather], tool_choice="none").ainvoke("hi")
    assert [t.name for t in provider.requests[0].tools] == ["Weather"]
    assert provider.requests[1].tools == []
    with pytest.raises(ConfigError, match="tool_choice 'subtract' names no bound tool"):
        model.bind_tools([add], tool_choice="subtract")


async def test_stop_sequences_timeout_retries_and_unknown_arguments() -> None:
    model, _ = _model(ModelResponse(content="one two STOP three"))
    assert (await model.ainvoke("count", stop=["STOP"])).content == "one two "
    flaky, provider = _model(
        ProviderError("overloaded", retryable=True, retry_after=0),
        ModelResponse(content="fine"),
        max_retries=1,
    )
    assert (await flaky.ainvoke("hi")).content == "fine" and len(provider.requests) == 2
    failing, _ = _model(ProviderError("bad key", retryable=False), max_retries=3)
    with pytest.raises(ProviderError, match="bad key"):
        await failing.ainvoke("hi")
    with pytest.raises(ConfigError, match=r"cannot send an avo provider: \['top_k'\]"):
        await model.ainvoke("hi", top_k=3)
    with pytest.raises(ValueError, match="needs an avo provider with async generate"):
        AvoLangChainModel(provider=object())


async def test_streaming_from_a_streaming_avo_provider() -> None:
    provider = FakeProvider([ModelResponse(content="hello there, world")], chunk_chars=4)
    model = AvoLangChainModel(provider=provider)
    pieces = [chunk async for chunk in model.astream("hi")]
    assert len(pieces) > 3
    assert "".join(str(p.content) for p in pieces) == "hello there, world"
    stopped = AvoLangChainModel(
        provider=FakeProvider([ModelResponse(content="hello there, world")], chunk_chars=4),
        stop=["re, w"],
    )
    assert "".join([str(p.content) async for p in stopped.astream("hi")]) == "hello the"
    calls = AvoLangChainModel(
        provider=FakeProvider([ModelResponse(tool_call=ToolCall(name="add", arguments={"a": 1}))])
    )
    total = None
    async for chunk in calls.astream("hi"):
        total = chunk if total is None else total + chunk
    assert total is not None and total.tool_calls[0]["args"] == {"a": 1}  # type: ignore[attr-defined]


async def test_structured_output_three_ways() -> None:
    answer = json.dumps({"city": "Oslo", "unit": "celsius"})
    model, provider = _model(
        ModelResponse(tool_call=ToolCall(name="Weather", arguments={"city": "Oslo"})),
        ModelResponse(content=answer),
        ModelResponse(content=answer),
    )
    by_tool = await model.with_structured_output(Weather).ainvoke("weather in Oslo?")
    assert by_tool == Weather(city="Oslo")
    by_schema = await model.with_structured_output(Weather, method="json_schema").ainvoke("?")
    assert by_schema == Weather(city="Oslo")
    assert provider.requests[1].output_schema is not None
    assert provider.requests[1].output_schema["properties"]["city"]["type"] == "string"  # type: ignore[index]
    raw = await model.with_structured_output(
        Weather.model_json_schema(), method="json_mode", include_raw=True
    ).ainvoke("?")
    assert raw["parsed"] == {"city": "Oslo", "unit": "celsius"}
    assert isinstance(raw["raw"], AIMessage)
    with pytest.raises(ConfigError, match="method 'xml' is unknown"):
        model.with_structured_output(Weather, method="xml")
