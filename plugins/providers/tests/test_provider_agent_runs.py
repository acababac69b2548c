"""A full tool-calling agent run through AgentRuntime for every wire format, on loopback HTTP.

Each vendor's scripted server answers in that vendor's documented shape; after
the run the test asserts what the server received (auth header, path, model,
tool schema shape, and the tool call / tool result round-tripped in the
vendor's message shape). Streaming on and off.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from avo.events import EventType
from avo.models import TokenUsage
from avo.policies import LoopPolicy
from avo.runtime import AgentRuntime
from avo.state import RunState, StopReason
from avo.testing.providers import RecordedRequest, ScriptedHTTPServer, ScriptedResponse
from avo.tools import FunctionTool
from avo_providers.anthropic import AnthropicProvider
from avo_providers.base_http import MiniMaxConfig, ProviderConfig
from avo_providers.gemini import GeminiProvider
from avo_providers.minimax import MiniMaxProvider
from avo_providers.ollama import OllamaCloudProvider, OllamaProvider
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.openai_vendors import CerebrasProvider, GroqProvider, OpenRouterProvider
from avo_providers.wire_fakes import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire

KEY = "sk-test-key-abcdef0123456789"
SYSTEM = "You are a terse weather agent."
TASK = "What is the weather in Paris?"
ANSWER = "Sunny in Paris."
USAGE = TokenUsage(input_tokens=30, output_tokens=8)
TOOL_OUTPUT = {"city": "Paris", "forecast": "sunny"}


class WeatherArgs(BaseModel):
    city: str


def weather_tool() -> FunctionTool[WeatherArgs]:
    return FunctionTool(
        name="get_weather",
        description="Current weather for a city.",
        arguments_model=WeatherArgs,
        function=lambda args: {"city": args.city, "forecast": "sunny"},
    )


SCHEMA = weather_tool().metadata.input_schema


# ------------------------------------------------------------ per-format checks
def check_openai(first: dict[str, Any], second: dict[str, Any], stream: bool) -> None:
    assert first["model"] == "m"
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": SCHEMA,
            },
        }
    ]
    assert first["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    assert first.get("stream", False) is stream
    assistant, tool = second["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert tool["role"] == "tool"
    assert tool["tool_call_id"] == "call_1"
    assert json.loads(tool["content"]) == TOOL_OUTPUT


def check_anthropic(first: dict[str, Any], second: dict[str, Any], stream: bool) -> None:
    assert first["model"] == "m"
    assert first["max_tokens"] == 1024
    assert first["system"] == [{"type": "text", "text": SYSTEM}]
    assert first["messages"] == [{"role": "user", "content": [{"type": "text", "text": TASK}]}]
    assert first["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": SCHEMA,
        }
    ]
    assert first.get("stream", False) is stream
    assistant, user = second["messages"][-2:]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
        ],
    }
    assert user["role"] == "user"
    [result] = user["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "call_1"
    assert json.loads(result["content"]) == TOOL_OUTPUT


def check_gemini(first: dict[str, Any], second: dict[str, Any], stream: bool) -> None:
    assert first["systemInstruction"] == {"parts": [{"text": SYSTEM}]}
    assert first["contents"] == [{"role": "user", "parts": [{"text": TASK}]}]
    [declaration] = first["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "get_weather"
    assert declaration["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    assert first["generationConfig"] == {"maxOutputTokens": 1024}
    model_turn, user_turn = second["contents"][-2:]
    assert model_turn == {
        "role": "model",
        "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
    }
    assert user_turn == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": TOOL_OUTPUT}}],
    }


def check_ollama(first: dict[str, Any], second: dict[str, Any], stream: bool) -> None:
    assert first["model"] == "m"
    assert first["stream"] is stream
    assert first["options"] == {"num_predict": 1024}
    assert first["tools"][0]["function"]["parameters"] == SCHEMA
    assistant, tool = second["messages"][-2:]
    assert assistant["tool_calls"] == [
        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    ]
    assert tool["role"] == "tool"
    assert tool["tool_name"] == "get_weather"
    assert json.loads(tool["content"]) == TOOL_OUTPUT


def bearer(request: RecordedRequest) -> None:
    assert request.header("authorization") == f"Bearer {KEY}"


def anthropic_auth(request: RecordedRequest) -> None:
    assert request.header("x-api-key") == KEY
    assert request.header("anthropic-version") == "2023-06-01"
    assert request.header("authorization") is None


def gemini_auth(request: RecordedRequest) -> None:
    assert request.header("x-goog-api-key") == KEY
    assert "key=" not in request.path


def no_auth(request: RecordedRequest) -> None:
    assert request.header("authorization") is None


def openrouter_auth(request: RecordedRequest) -> None:
    bearer(request)
    assert request.header("http-referer") == "https://github.com/Fqih/avo"
    assert request.header("x-title") == "Avo Agent Runtime"


@dataclass
class Case:
    id: str
    wire: Any
    make: Callable[[str], Any]
    path: Callable[[bool], str]
    auth: Callable[[RecordedRequest], None]
    check: Callable[[dict[str, Any], dict[str, Any], bool], None]
    name: str


def _cfg(url: str, key: str | None = KEY) -> ProviderConfig:
    return ProviderConfig(model="m", api_key=key, base_url=url)


def _chat(stream: bool) -> str:
    return "/chat/completions"


CASES = [
    Case(
        "openai",
        OpenAIWire(),
        lambda u: OpenAICompatibleProvider(_cfg(u)),
        _chat,
        bearer,
        check_openai,
        "openai-compatible",
    ),
    Case(
        "groq", OpenAIWire(), lambda u: GroqProvider(_cfg(u)), _chat, bearer, check_openai, "groq"
    ),
    Case(
        "cerebras",
        OpenAIWire(),
        lambda u: CerebrasProvider(_cfg(u)),
        _chat,
        bearer,
        check_openai,
        "cerebras",
    ),
    Case(
        "openrouter",
        OpenAIWire(),
        lambda u: OpenRouterProvider(_cfg(u)),
        _chat,
        openrouter_auth,
        check_openai,
        "openrouter",
    ),
    Case(
        "anthropic",
        AnthropicWire(),
        lambda u: AnthropicProvider(_cfg(u)),
        lambda s: "/v1/messages",
        anthropic_auth,
        check_anthropic,
        "anthropic",
    ),
    Case(
        "gemini",
        GeminiWire(),
        lambda u: GeminiProvider(_cfg(u)),
        lambda s: (
            "/v1beta/models/m:streamGenerateContent?alt=sse"
            if s
            else "/v1beta/models/m:generateContent"
        ),
        gemini_auth,
        check_gemini,
        "gemini",
    ),
    Case(
        "ollama",
        OllamaWire(),
        lambda u: OllamaProvider(_cfg(u, None)),
        lambda s: "/api/chat",
        no_auth,
        check_ollama,
        "ollama",
    ),
    Case(
        "ollama-cloud",
        OllamaWire(),
        lambda u: OllamaCloudProvider(_cfg(u)),
        lambda s: "/api/chat",
        bearer,
        check_ollama,
        "ollama-cloud",
    ),
    Case(
        "minimax-openai",
        OpenAIWire(),
        lambda u: MiniMaxProvider(
            MiniMaxConfig(model="m", api_key=KEY, base_url=u, api_style="openai")
        ),
        lambda s: "/v1/chat/completions",
        bearer,
        check_openai,
        "minimax",
    ),
    Case(
        "minimax-anthropic",
        AnthropicWire(),
        lambda u: MiniMaxProvider(
            MiniMaxConfig(model="m", api_key=KEY, base_url=u, api_style="anthropic")
        ),
        lambda s: "/anthropic/v1/messages",
        anthropic_auth,
        check_anthropic,
        "minimax",
    ),
]


def _script(case: Case, stream: bool) -> list[ScriptedResponse]:
    wire = case.wire
    args = {"city": "Paris"}
    if stream:
        return [
            wire.tool_call_stream("call_1", "get_weather", args, USAGE),
            wire.text_stream(ANSWER, USAGE),
        ]
    return [wire.tool_call("call_1", "get_weather", args, USAGE), wire.text(ANSWER, USAGE)]


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_tool_calling_agent_run(case: Case, stream: bool) -> None:
    streamed: list[str] = []
    async with ScriptedHTTPServer(_script(case, stream)) as server:
        provider = case.make(server.url)
        runtime = AgentRuntime(
            provider=provider,
            tools=[weather_tool()],
            policy=LoopPolicy(max_steps=5),
            stream_callback=streamed.append if stream else None,
        )
        result = await runtime.run(TASK, system_prompt=SYSTEM)
        await provider.aclose()
    assert result.status is RunState.COMPLETED, result.error
    assert result.output == ANSWER
    assert result.token_usage == USAGE.plus(USAGE)
    if stream:
        assert "".join(streamed).endswith(ANSWER)
    assert len(server.requests) == 2
    for request in server.requests:
        assert request.method == "POST"
        assert request.path == case.path(stream)
        case.auth(request)
        assert request.header("content-type") == "application/json"
    case.check(server.requests[0].json(), server.requests[1].json(), stream)
    events = await runtime.event_store.get_events(result.run_id)
    responded = [e for e in events if e.event_type is EventType.MODEL_RESPONDED]
    assert [e.payload["provider"] for e in responded] == [case.name, case.name]
    assert responded[0].payload["model"] == "m"
    tool_done = [e for e in events if e.event_type is EventType.TOOL_COMPLETED]
    assert len(tool_done) == 1
    assert KEY not in json.dumps([e.payload for e in events])


# ------------------------------------------------------------ malformed answers
WIRES = {
    "OpenAI": (OpenAIWire(), lambda u: OpenAICompatibleProvider(_cfg(u))),
    "Anthropic": (AnthropicWire(), lambda u: AnthropicProvider(_cfg(u))),
    "Gemini": (GeminiWire(), lambda u: GeminiProvider(_cfg(u))),
    "Ollama": (OllamaWire(), lambda u: OllamaProvider(_cfg(u))),
}
MALFORMED = {
    "invalid-json": (
        False,
        lambda w: ScriptedResponse.text("{oops", content_type="application/json"),
    ),
    "nameless-tool-call": (False, lambda w: w.tool_call("call_1", None, {}, USAGE)),
    "wrong-content-type": (
        False,
        lambda w: ScriptedResponse.text("<html>bad gateway</html>", content_type="text/html"),
    ),
    "truncated-stream": (True, lambda w: w.truncated_stream()),
    "stream-wrong-content-type": (
        True,
        lambda w: ScriptedResponse.text("<html>bad gateway</html>", content_type="text/html"),
    ),
    "stream-invalid-json": (
        True,
        lambda w: ScriptedResponse(
            content_type="application/x-ndjson"
            if isinstance(w, OllamaWire)
            else "text/event-stream",
            chunks=[b"{not json\n" if isinstance(w, OllamaWire) else b"data: {not json\n\n"],
        ),
    ),
}


@pytest.mark.parametrize("problem", list(MALFORMED))
@pytest.mark.parametrize("vendor", list(WIRES))
async def test_malformed_answer_fails_the_run_naming_the_vendor(vendor: str, problem: str) -> None:
    wire, make = WIRES[vendor]
    stream, build = MALFORMED[problem]
    async with ScriptedHTTPServer([build(wire)]) as server:
        provider = make(server.url)
        runtime = AgentRuntime(
            provider=provider,
            tools=[weather_tool()],
            policy=LoopPolicy(max_steps=3),
            stream_callback=(lambda _text: None) if stream else None,
        )
        result = await runtime.run(TASK)
        await provider.aclose()
    assert result.status is RunState.FAILED
    assert result.stop_reason in {StopReason.PROVIDER_ERROR, StopReason.INVALID_MODEL_RESPONSE}
    assert result.error is not None
    assert vendor in result.error
    assert "malformed" in result.error
    assert len(server.requests) == 1  # not retried: a malformed answer is not transient


@pytest.mark.parametrize("vendor", list(WIRES))
async def test_api_key_never_reaches_errors_or_events(vendor: str) -> None:
    wire, make = WIRES[vendor]
    echo = f"invalid key {KEY} (Authorization: Bearer {KEY})"
    async with ScriptedHTTPServer([wire.error(401, echo)]) as server:
        provider = make(server.url)
        runtime = AgentRuntime(provider=provider, policy=LoopPolicy(max_steps=2))
        result = await runtime.run(TASK)
        events = await runtime.event_store.get_events(result.run_id)
        await provider.aclose()
    assert result.status is RunState.FAILED
    assert result.stop_reason is StopReason.PROVIDER_ERROR
    assert "401" in (result.error or "")
    assert KEY not in (result.error or "")
    assert KEY not in json.dumps([e.payload for e in events])
    assert KEY not in repr(provider)


async def test_rate_limit_is_retried_then_succeeds() -> None:
    wire = OpenAIWire()
    script = [wire.error(429, "Rate limit reached"), wire.text(ANSWER, USAGE)]
    waits: list[float] = []

    async def sleep(
        delay: float,
    ) -> None:  # the wait itself is measured in test_provider_loop_fidelity
        waits.append(delay)

    async with ScriptedHTTPServer(script) as server:
        provider = OpenAICompatibleProvider(_cfg(server.url))
        runtime = AgentRuntime(provider=provider, policy=LoopPolicy(max_steps=3), sleep=sleep)
        result = await runtime.run(TASK)
        events = await runtime.event_store.get_events(result.run_id)
        await provider.aclose()
    assert result.status is RunState.COMPLETED
    [failed] = [e for e in events if e.event_type is EventType.MODEL_FAILED]
    assert "429" in json.dumps(failed.payload)
    assert "retry after 2s" in json.dumps(failed.payload)
    assert waits == [2.0] and failed.payload["retry_in_seconds"] == 2
