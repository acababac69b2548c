"""Reasoning that must go back to the vendor, and structured output, on loopback servers.

Anthropic (and MiniMax in its Anthropic style) require a turn's thinking blocks,
signatures intact, with its tool calls on the next request; MiniMax in its
OpenAI style wants its ``<think>`` reasoning back in the content; Gemini its
``thoughtSignature``. They travel in the run's transcript, so they also
survive a resume in a new process (a new provider object). Structured output
uses each vendor's JSON mode where the adapter declares one.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from avo.models import TokenUsage
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo.storage.memory import InMemoryEventStore
from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse
from avo.tools import FunctionTool
from avo_providers.anthropic import AnthropicProvider
from avo_providers.base_http import MiniMaxConfig, ProviderConfig
from avo_providers.gemini import GeminiProvider
from avo_providers.minimax import MiniMaxProvider
from avo_providers.ollama import OllamaProvider
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.wire_fakes import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire

KEY = "sk-thinking-0123456789abcdef"
USAGE = TokenUsage(input_tokens=8, output_tokens=3)
THINKING = [
    {
        "type": "thinking",
        "thinking": "The user wants the weather; look it up.",
        "signature": "sig-1",
    },
    {"type": "redacted_thinking", "data": "EnCrYpTeD"},
]


class City(BaseModel):
    city: str


def weather_tool() -> FunctionTool[City]:
    return FunctionTool(
        name="get_weather",
        description="Weather for a city.",
        arguments_model=City,
        function=lambda args: {"city": args.city, "sky": "clear"},
        risk="inspect",
    )


def cfg(url: str) -> ProviderConfig:
    return ProviderConfig(model="m", api_key=KEY, base_url=url)


class Crash(BaseException):
    """The process dies (nothing in the runtime catches it)."""


class DieBeforeSecondCall:
    """A rate limiter that kills the 'process' before the second model call."""

    def __init__(self) -> None:
        self.calls = 0

    async def acquire(self, *, input_tokens: int = 0) -> None:
        self.calls += 1
        if self.calls == 2:
            raise Crash


async def run_then_resume(make: Any, script: list[ScriptedResponse]) -> list[dict[str, Any]]:
    """Run until just before the second model call, die, resume with a new provider."""
    store = InMemoryEventStore()
    async with ScriptedHTTPServer(script) as server:
        first = make(server.url)
        runtime = AgentRuntime(
            provider=first,
            tools=[weather_tool()],
            event_store=store,
            rate_limiter=DieBeforeSecondCall(),
        )
        with pytest.raises(Crash):
            await runtime.run("weather in Oslo?", run_id="r")
        await first.aclose()
        second = make(server.url)  # a new process: nothing kept in memory
        resumed = AgentRuntime(provider=second, tools=[weather_tool()], event_store=store)
        result = await resumed.resume("r")
        await second.aclose()
    assert result.status is RunState.COMPLETED, result.error
    return [request.json() for request in server.requests]


ANTHROPIC_STYLES = {
    "anthropic": lambda u: AnthropicProvider(cfg(u)),
    "minimax-anthropic": lambda u: MiniMaxProvider(
        MiniMaxConfig(model="m", api_key=KEY, base_url=u, api_style="anthropic")
    ),
}


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize("style", list(ANTHROPIC_STYLES))
async def test_thinking_blocks_go_back_with_their_signatures(style: str, stream: bool) -> None:
    wire = AnthropicWire()
    calls = [("toolu_1", "get_weather", {"city": "Oslo"})]
    first = (wire.tool_calls_stream if stream else wire.tool_calls)(calls, USAGE, THINKING)
    final = wire.text_stream("Clear.", USAGE) if stream else wire.text("Clear.", USAGE)
    async with ScriptedHTTPServer([first, final]) as server:
        provider = ANTHROPIC_STYLES[style](server.url)
        runtime = AgentRuntime(
            provider=provider,
            tools=[weather_tool()],
            stream_callback=(lambda _text: None) if stream else None,
        )
        result = await runtime.run("weather in Oslo?")
        await provider.aclose()
    assert result.status is RunState.COMPLETED, result.error
    assistant = server.requests[1].json()["messages"][-2]
    assert assistant["role"] == "assistant"
    assert assistant["content"][:2] == THINKING  # first, exactly as sent, signature intact
    assert assistant["content"][2]["type"] == "tool_use"


@pytest.mark.parametrize("style", list(ANTHROPIC_STYLES))
async def test_thinking_blocks_survive_a_resume(style: str) -> None:
    wire = AnthropicWire()
    script = [
        wire.tool_calls([("toolu_1", "get_weather", {"city": "Oslo"})], USAGE, THINKING),
        wire.text("Clear.", USAGE),
    ]
    _first, second = await run_then_resume(ANTHROPIC_STYLES[style], script)
    assistant = second["messages"][-2]
    assert assistant["content"][:2] == THINKING
    assert "source" not in json.dumps(second)  # the transcript's tag stays home


async def test_another_vendors_thinking_is_not_sent() -> None:
    """MiniMax's blocks carry MiniMax's signatures: Anthropic never gets them."""
    from avo.models import ModelRequest

    message = {
        "role": "assistant",
        "content": None,
        "thinking": [{**THINKING[0], "source": "minimax"}],
        "tool_calls": [
            {
                "id": "k1",
                "vendor_id": "toolu_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            }
        ],
    }
    request = ModelRequest(run_id="r", step=2, messages=[{"role": "user", "content": "x"}, message])
    payload = AnthropicProvider(cfg("http://127.0.0.1:9")).build_payload(request, stream=False)
    assert [b["type"] for b in payload["messages"][-1]["content"]] == ["tool_use"]
    assert payload["messages"][-1]["content"][0]["id"] == "toolu_1"


def minimax_openai_turn() -> ScriptedResponse:
    return ScriptedResponse.json(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "<think>Look up Oslo first.</think>",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": json.dumps({"city": "Oslo"}),
                                },
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
        }
    )


async def test_minimax_gets_its_think_back_even_after_a_resume() -> None:
    def make(url: str) -> Any:
        return MiniMaxProvider(MiniMaxConfig(model="m", api_key=KEY, base_url=url))

    _first, second = await run_then_resume(
        make, [minimax_openai_turn(), OpenAIWire().text("Clear.", USAGE)]
    )
    assistant = second["messages"][-2]
    assert assistant["content"] == "<think>Look up Oslo first.</think>"
    assert assistant["tool_calls"][0]["id"] == "call_1"


async def test_plain_openai_servers_do_not_get_reasoning_back() -> None:
    def make(url: str) -> Any:
        return OpenAICompatibleProvider(cfg(url))

    _first, second = await run_then_resume(
        make, [minimax_openai_turn(), OpenAIWire().text("Clear.", USAGE)]
    )
    assert second["messages"][-2]["content"] is None


async def test_gemini_thought_signatures_survive_a_resume() -> None:
    wire = GeminiWire()
    script = [
        wire.tool_calls([("", "get_weather", {"city": "Oslo"})], USAGE, signature="gsig-1"),
        wire.text("Clear.", USAGE),
    ]
    _first, second = await run_then_resume(lambda u: GeminiProvider(cfg(u)), script)
    model_turn = second["contents"][-2]
    assert model_turn["role"] == "model"
    assert model_turn["parts"][0]["thoughtSignature"] == "gsig-1"
    assert "id" not in model_turn["parts"][0]["functionCall"]  # Gemini gave none


# ------------------------------------------------------------ structured output


class Weather(BaseModel):
    city: str
    celsius: float


ANSWER = '{"city": "Oslo", "celsius": -3}'


async def structured(make: Any, script: list[ScriptedResponse]) -> dict[str, Any]:
    async with ScriptedHTTPServer(script) as server:
        provider = make(server.url)
        result = await AgentRuntime(provider=provider).run("weather?", output_schema=Weather)
        await provider.aclose()
    assert result.parsed == Weather(city="Oslo", celsius=-3), result.error
    body: dict[str, Any] = server.requests[0].json()
    return body


async def test_openai_json_schema_mode_is_strict() -> None:
    body = await structured(
        lambda u: OpenAICompatibleProvider(cfg(u)), [OpenAIWire().text(ANSWER, USAGE)]
    )
    spec = body["response_format"]
    assert spec["type"] == "json_schema"
    schema = spec["json_schema"]
    assert (schema["name"], schema["strict"]) == ("Weather", True)
    assert schema["schema"]["required"] == ["city", "celsius"]
    assert schema["schema"]["additionalProperties"] is False
    assert "title" not in schema["schema"]


async def test_gemini_json_mode() -> None:
    body = await structured(lambda u: GeminiProvider(cfg(u)), [GeminiWire().text(ANSWER, USAGE)])
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["properties"]["celsius"] == {"type": "number"}


async def test_ollama_format() -> None:
    body = await structured(lambda u: OllamaProvider(cfg(u)), [OllamaWire().text(ANSWER, USAGE)])
    assert body["format"]["required"] == ["city", "celsius"]


async def test_anthropic_gets_the_schema_as_an_instruction() -> None:
    body = await structured(
        lambda u: AnthropicProvider(cfg(u)), [AnthropicWire().text(ANSWER, USAGE)]
    )
    assert "response_format" not in body
    assert '"celsius"' in body["system"][0]["text"]


# ------------------------------------------------------------ tool schemas, per vendor


class Place(BaseModel):
    name: str
    country: str | None = None


class Plan(BaseModel):
    """Arguments that use what a tool's schema can say."""

    stops: list[Place]
    budget: dict[str, float]  # an open map: additionalProperties is the value's schema
    mode: Literal["walk", "ride"] = "walk"


class NoArguments(BaseModel):
    pass


def plan_tools() -> list[FunctionTool[Any]]:
    return [
        FunctionTool(
            name="plan",
            description="Plan a trip.",
            arguments_model=Plan,
            function=lambda args: "ok",
            risk="inspect",
        ),
        FunctionTool(
            name="now",
            description="The time.",
            arguments_model=NoArguments,
            function=lambda args: "noon",
            risk="inspect",
        ),
    ]


async def first_request(make: Any, reply: ScriptedResponse) -> dict[str, Any]:
    async with ScriptedHTTPServer([reply]) as server:
        provider = make(server.url)
        await AgentRuntime(provider=provider, tools=plan_tools()).run("plan it")
        await provider.aclose()
    body: dict[str, Any] = server.requests[0].json()
    return body


def plan_schema_says_what_it_means(schema: dict[str, Any]) -> None:
    assert "title" not in json.dumps(schema)  # no titles: they cost tokens on every request
    assert schema["additionalProperties"] is False
    assert schema["properties"]["budget"] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert schema["required"] == ["stops", "budget"]


async def test_openai_and_ollama_tools_get_the_json_schema() -> None:
    for make, wire in (
        (lambda u: OpenAICompatibleProvider(cfg(u)), OpenAIWire()),
        (lambda u: OllamaProvider(cfg(u)), OllamaWire()),
    ):
        body = await first_request(make, wire.text("done", USAGE))
        plan, now = (t["function"]["parameters"] for t in body["tools"])
        plan_schema_says_what_it_means(plan)
        assert now == {"type": "object", "properties": {}, "additionalProperties": False}


async def test_anthropic_tools_get_the_json_schema() -> None:
    body = await first_request(
        lambda u: AnthropicProvider(cfg(u)), AnthropicWire().text("done", USAGE)
    )
    plan, now = (t["input_schema"] for t in body["tools"])
    plan_schema_says_what_it_means(plan)
    assert now["type"] == "object" and now["properties"] == {}


async def test_gemini_tools_follow_its_schema_rules() -> None:
    body = await first_request(lambda u: GeminiProvider(cfg(u)), GeminiWire().text("done", USAGE))
    plan, now = body["tools"][0]["functionDeclarations"]
    # Gemini's OpenAPI subset has no open maps (an object must list its properties),
    # so a schema with one goes as JSON Schema, whole; a tool without arguments
    # declares none (an object with no properties is refused).
    assert "parameters" not in plan
    plan_schema_says_what_it_means(plan["parametersJsonSchema"])
    assert set(now) == {"name", "description"}


async def test_gemini_keeps_its_subset_when_it_can_say_it_all() -> None:
    # the weather tool of the other tests: a closed object of listed properties
    async with ScriptedHTTPServer([GeminiWire().text("done", USAGE)]) as server:
        provider = GeminiProvider(cfg(server.url))
        await AgentRuntime(provider=provider, tools=[weather_tool()]).run("weather?")
        await provider.aclose()
    [declaration] = server.requests[0].json()["tools"][0]["functionDeclarations"]
    assert declaration["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }


class Budget(BaseModel):
    city: str
    costs: dict[str, float]


async def test_gemini_json_mode_with_an_open_map_uses_json_schema() -> None:
    answer = '{"city": "Oslo", "costs": {"food": 12.5}}'
    async with ScriptedHTTPServer([GeminiWire().text(answer, USAGE)]) as server:
        provider = GeminiProvider(cfg(server.url))
        result = await AgentRuntime(provider=provider).run("budget?", output_schema=Budget)
        await provider.aclose()
    assert result.parsed == Budget(city="Oslo", costs={"food": 12.5}), result.error
    config = server.requests[0].json()["generationConfig"]
    assert "responseSchema" not in config
    assert config["responseJsonSchema"]["properties"]["costs"]["additionalProperties"] == {
        "type": "number"
    }


def test_strict_output_schemas_follow_openai_rules() -> None:
    from avo.schemas import to_json_schema, to_strict_schema
    from avo_providers.openai_compatible import response_format

    strict = response_format(to_json_schema(Place))["json_schema"]
    assert strict["strict"] is True
    # strict: every property required (optional ones stay nullable), none other allowed
    assert strict["schema"]["required"] == ["name", "country"]
    assert strict["schema"]["properties"]["country"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    assert strict["schema"]["additionalProperties"] is False
    # an open map has no strict form: the schema goes as is, not strict
    loose = response_format(to_json_schema(Budget))["json_schema"]
    assert loose["strict"] is False and to_strict_schema(to_json_schema(Budget)) is None
    assert loose["schema"]["properties"]["costs"]["additionalProperties"] == {"type": "number"}


class Node(BaseModel):
    """A tree: its schema refers to itself, which Gemini's subset cannot say."""

    label: str
    children: list[Node] = []


def test_gemini_sends_a_schema_that_refers_to_itself_as_json_schema() -> None:
    from avo.schemas import to_json_schema
    from avo_providers.gemini import gemini_parameters

    schema = to_json_schema(Node)
    assert gemini_parameters(schema) == {"parametersJsonSchema": schema}


# ------------------------------------------------- OpenRouter's reasoning_details

REASONING_DETAILS = [
    {
        "type": "reasoning.text",
        "text": "Look up Oslo, then answer.",
        "signature": "c2lnbmVkLWJ5LXRoZS12ZW5kb3I=",
        "format": "anthropic-claude-v1",
        "index": 0,
    },
    {
        "type": "reasoning.encrypted",
        "data": "ZW5jcnlwdGVk",
        "format": "google-gemini-v1",
        "index": 1,
    },
]


def openrouter(url: str) -> Any:
    from avo_providers.openai_vendors import OpenRouterProvider

    return OpenRouterProvider(cfg(url))


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
async def test_openrouter_gets_its_reasoning_details_back(stream: bool) -> None:
    wire = OpenAIWire()
    calls = [("call_1", "get_weather", {"city": "Oslo"})]
    first = (wire.tool_calls_stream if stream else wire.tool_calls)(
        calls, USAGE, reasoning_details=REASONING_DETAILS
    )
    final = wire.text_stream("Clear.", USAGE) if stream else wire.text("Clear.", USAGE)
    async with ScriptedHTTPServer([first, final]) as server:
        provider = openrouter(server.url)
        runtime = AgentRuntime(
            provider=provider,
            tools=[weather_tool()],
            stream_callback=(lambda _text: None) if stream else None,
        )
        result = await runtime.run("weather in Oslo?")
        await provider.aclose()
    assert result.status is RunState.COMPLETED, result.error
    assistant = server.requests[1].json()["messages"][-2]
    assert assistant["reasoning_details"] == REASONING_DETAILS  # unchanged, signatures intact
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert "reasoning_details" not in server.requests[0].json()["messages"][-1]


async def test_openrouter_reasoning_details_survive_a_resume() -> None:
    wire = OpenAIWire()
    script = [
        wire.tool_calls(
            [("call_1", "get_weather", {"city": "Oslo"})],
            USAGE,
            reasoning_details=REASONING_DETAILS,
        ),
        wire.text("Clear.", USAGE),
    ]
    _first, second = await run_then_resume(openrouter, script)
    assert second["messages"][-2]["reasoning_details"] == REASONING_DETAILS
    assert "source" not in json.dumps(second)


async def test_other_openai_style_vendors_send_no_reasoning_details() -> None:
    """Plain OpenAI-compatible servers neither keep nor send what they did not ask for."""
    wire = OpenAIWire()
    calls = [("call_1", "get_weather", {"city": "Oslo"})]
    script = [wire.tool_calls(calls, USAGE, REASONING_DETAILS), wire.text("Clear.", USAGE)]
    async with ScriptedHTTPServer(script) as server:
        provider = OpenAICompatibleProvider(cfg(server.url))
        await AgentRuntime(provider=provider, tools=[weather_tool()]).run("weather in Oslo?")
        await provider.aclose()
    assert "reasoning_details" not in server.requests[1].json()["messages"][-2]


def test_streamed_reasoning_details_fragments_merge_by_index() -> None:
    from avo_providers.openai_compatible import merge_reasoning_details

    parts = [
        {"type": "reasoning.text", "text": "Look ", "index": 0, "signature": None},
        {"type": "reasoning.encrypted", "data": "ZW5j", "index": 1},
        {"type": "reasoning.text", "text": "twice.", "index": 0},
        {"type": "reasoning.text", "text": "", "index": 0, "signature": "sig"},
    ]
    assert merge_reasoning_details(parts) == [
        {"type": "reasoning.text", "text": "Look twice.", "index": 0, "signature": "sig"},
        {"type": "reasoning.encrypted", "data": "ZW5j", "index": 1},
    ]
