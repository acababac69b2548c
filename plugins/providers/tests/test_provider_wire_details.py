"""Wire-format details: prompt caching, <think> splitting, schema rewriting, errors, timeouts."""

from __future__ import annotations

import json

import pytest

from avo.exceptions import ProviderError
from avo.models import ModelRequest, TokenUsage, ToolMetadata
from avo.providers.streaming import collect_stream
from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse
from avo_providers.anthropic import AnthropicProvider, build_anthropic_payload
from avo_providers.base_http import ProviderConfig
from avo_providers.gemini import GeminiProvider, build_gemini_payload, gemini_schema
from avo_providers.http_common import ProviderHTTPError, redact_text
from avo_providers.ollama import OllamaProvider
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.wire_fakes import AnthropicWire, OpenAIWire

KEY = "sk-detail-key-0123456789"
USAGE = TokenUsage(input_tokens=4, output_tokens=2)
TOOL = ToolMetadata(
    name="lookup",
    description="Look something up.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


def cfg(url: str) -> ProviderConfig:
    return ProviderConfig(model="m", api_key=KEY, base_url=url)


def conversation(**extra: object) -> ModelRequest:
    return ModelRequest(
        run_id="r",
        step=3,
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Find x."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "name": "lookup",
                "content": json.dumps({"error": "not found"}),
            },
            {"role": "user", "content": "Try again."},
        ],
        tools=[TOOL],
        **extra,
    )


# ------------------------------------------------------------ Anthropic
def test_anthropic_prompt_cache_breakpoints() -> None:
    payload = build_anthropic_payload(
        conversation(cache=True, cache_prefix_messages=2), model="m", max_tokens=10, stream=False
    )
    assert payload["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert payload["system"][-1]["cache_control"] == {"type": "ephemeral"}
    messages = payload["messages"]
    # Prefix: the first non-system message; tail: the last turn.
    assert messages[0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    marks = json.dumps(payload).count("cache_control")
    assert marks <= 4
    plain = build_anthropic_payload(conversation(), model="m", max_tokens=10, stream=False)
    assert "cache_control" not in json.dumps(plain)


def test_anthropic_merges_tool_result_with_following_user_turn_and_flags_errors() -> None:
    payload = build_anthropic_payload(conversation(), model="m", max_tokens=10, stream=False)
    roles = [m["role"] for m in payload["messages"]]
    assert roles == ["user", "assistant", "user"]
    result, follow_up = payload["messages"][-1]["content"]
    assert result["type"] == "tool_result"
    assert result["is_error"] is True
    assert follow_up == {"type": "text", "text": "Try again."}


async def test_anthropic_cached_request_goes_over_the_wire() -> None:
    async with ScriptedHTTPServer([AnthropicWire().text("ok", USAGE)]) as server:
        provider = AnthropicProvider(cfg(server.url))
        await provider.generate(conversation(cache=True))
        await provider.aclose()
    body = server.requests[0].json()
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_anthropic_stream_error_event_is_retryable_and_named() -> None:
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "usage": {}}}),
        (
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    ]
    async with ScriptedHTTPServer([ScriptedResponse.sse(events)]) as server:
        provider = AnthropicProvider(cfg(server.url))
        with pytest.raises(ProviderError) as info:
            await collect_stream(provider, conversation())
        await provider.aclose()
    assert info.value.retryable is True
    assert "Anthropic stream error: overloaded_error" in str(info.value)


async def test_anthropic_thinking_goes_to_the_thought_channel() -> None:
    wire = AnthropicWire()
    stream = wire.text_stream("Answer.", USAGE)
    thinking = (
        b"event: content_block_delta\n"
        b'data: {"type": "content_block_delta", "index": 0, '
        b'"delta": {"type": "thinking_delta", "thinking": "pondering"}}\n\n'
    )
    stream.chunks = [stream.chunks[0], thinking, *stream.chunks[1:]]
    async with ScriptedHTTPServer([stream]) as server:
        provider = AnthropicProvider(cfg(server.url))
        chunks = [chunk async for chunk in provider.stream(conversation())]
        await provider.aclose()
    assert "".join(c.thought for c in chunks) == "pondering"
    assert "".join(c.text for c in chunks) == "Answer."


# ------------------------------------------------------------ OpenAI
async def test_think_tags_are_split_in_generate_and_stream() -> None:
    wire = OpenAIWire()
    text = "<think>step by step</think>The answer is 4."
    async with ScriptedHTTPServer([wire.text(text, USAGE), wire.text_stream(text, USAGE)]) as srv:
        provider = OpenAICompatibleProvider(cfg(srv.url))
        generated = await provider.generate(conversation())
        chunks = [chunk async for chunk in provider.stream(conversation())]
        await provider.aclose()
    assert generated.content == "The answer is 4."
    assert "".join(c.text for c in chunks) == "The answer is 4."
    assert "".join(c.thought for c in chunks) == "step by step"


async def test_first_of_several_tool_calls_wins() -> None:
    body = json.loads(OpenAIWire().tool_call("call_a", "lookup", {"q": "a"}, USAGE).body)
    second = {"id": "call_b", "type": "function", "function": {"name": "x", "arguments": "{}"}}
    body["choices"][0]["message"]["tool_calls"].append(second)
    async with ScriptedHTTPServer([ScriptedResponse.json(body)]) as server:
        provider = OpenAICompatibleProvider(cfg(server.url))
        response = await provider.generate(conversation())
        await provider.aclose()
    assert response.tool_call is not None
    assert response.tool_call.tool_call_id == "call_a"


async def test_error_object_in_a_200_response_is_malformed() -> None:
    body = {"error": {"message": "upstream exploded", "code": 502}}
    async with ScriptedHTTPServer([ScriptedResponse.json(body)]) as server:
        provider = OpenAICompatibleProvider(cfg(server.url))
        with pytest.raises(ProviderError, match="OpenAI returned a malformed response"):
            await provider.generate(conversation())
        await provider.aclose()


async def test_rate_limit_headers_are_exposed() -> None:
    limited = ScriptedResponse.json(
        {"error": {"message": "slow down"}}, status=429, headers={"retry-after-ms": "1500"}
    )
    async with ScriptedHTTPServer([limited]) as server:
        provider = OpenAICompatibleProvider(cfg(server.url))
        with pytest.raises(ProviderHTTPError) as info:
            await provider.generate(conversation())
        await provider.aclose()
    assert info.value.status_code == 429
    assert info.value.retry_after == 1.5
    assert info.value.retryable is True
    assert "retry after 1.5s" in str(info.value)


async def test_timeout_is_retryable() -> None:
    slow = OpenAIWire().text("late", USAGE)
    slow.delay_seconds = 2
    async with ScriptedHTTPServer([slow]) as server:
        provider = OpenAICompatibleProvider(cfg(server.url), request_timeout_seconds=0.1)
        with pytest.raises(ProviderError) as info:
            await provider.generate(conversation())
        await provider.aclose()
    assert info.value.retryable is True
    assert "OpenAI request timed out after 0.1s" in str(info.value)


def test_redact_text_masks_known_and_key_shaped_secrets() -> None:
    text = f"bad key {KEY}; Authorization: Bearer abcdef123456; custom my-secret-value"
    redacted = redact_text(text, "my-secret-value")
    assert KEY not in redacted
    assert "abcdef123456" not in redacted
    assert "my-secret-value" not in redacted


# ------------------------------------------------------------ Gemini / Ollama
def test_gemini_schema_inlines_refs_and_drops_unsupported_keys() -> None:
    schema = {
        "type": "object",
        "title": "Args",
        "additionalProperties": False,
        "$defs": {"Unit": {"type": "string", "enum": ["c", "f"], "title": "Unit"}},
        "properties": {
            "unit": {"$ref": "#/$defs/Unit"},
            "days": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
        },
        "required": ["unit"],
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["c", "f"]},
            "days": {"type": "integer", "nullable": True},
            "tags": {"type": "array", "nullable": True, "items": {"type": "string"}},
        },
        "required": ["unit"],
    }


def test_gemini_wraps_non_object_tool_results() -> None:
    request = conversation()
    request.messages[3]["content"] = json.dumps(["a", "b"])
    payload = build_gemini_payload(request, max_tokens=5)
    response = payload["contents"][-1]["parts"][0]["functionResponse"]
    assert response == {"name": "lookup", "response": {"result": ["a", "b"]}}


async def test_gemini_key_is_a_header_not_a_query_parameter() -> None:
    from avo_providers.wire_fakes import GeminiWire

    async with ScriptedHTTPServer([GeminiWire().text("hi", USAGE)]) as server:
        provider = GeminiProvider(cfg(server.url))
        await provider.generate(conversation())
        await provider.aclose()
    assert server.requests[0].header("x-goog-api-key") == KEY
    assert KEY not in server.requests[0].path


async def test_ollama_stream_error_line_fails_naming_ollama() -> None:
    stream = ScriptedResponse.ndjson([{"error": "model 'm' not found, try pulling it first"}])
    async with ScriptedHTTPServer([stream]) as server:
        provider = OllamaProvider(ProviderConfig(model="m", base_url=server.url))
        with pytest.raises(ProviderError, match="Ollama stream error: model 'm' not found") as e:
            await collect_stream(provider, conversation())
        await provider.aclose()
    assert e.value.retryable is True


async def test_key_echoed_inside_a_stream_or_body_is_masked() -> None:
    stream = ScriptedResponse.sse([(None, {"error": {"message": f"bad key {KEY}", "code": 502}})])
    broken = ScriptedResponse.text(f"{{{KEY}", content_type="application/json")
    async with ScriptedHTTPServer([stream, broken]) as server:
        provider = OpenAICompatibleProvider(cfg(server.url))
        with pytest.raises(ProviderError) as streamed:
            await collect_stream(provider, conversation())
        with pytest.raises(ProviderError) as generated:
            await provider.generate(conversation())
        await provider.aclose()
    assert "OpenAI stream error" in str(streamed.value)
    assert KEY not in str(streamed.value)
    assert "invalid JSON" in str(generated.value)
    assert KEY not in str(generated.value)


@pytest.mark.parametrize("stream", [False, True])
async def test_gemini_malformed_function_call_finish_is_an_error(stream: bool) -> None:
    body = {
        "candidates": [{"content": {"role": "model"}, "finishReason": "MALFORMED_FUNCTION_CALL"}]
    }
    answer = ScriptedResponse.sse([(None, body)]) if stream else ScriptedResponse.json(body)
    async with ScriptedHTTPServer([answer]) as server:
        provider = GeminiProvider(cfg(server.url))
        with pytest.raises(ProviderError, match="finished with MALFORMED_FUNCTION_CALL") as info:
            if stream:
                await collect_stream(provider, conversation())
            else:
                await provider.generate(conversation())
        await provider.aclose()
    assert info.value.retryable is False
    assert "Gemini" in str(info.value)


def test_section_7_3_names_are_importable_from_http_common() -> None:
    from avo_providers import http_common

    for name in (
        "build_openai_payload",
        "parse_openai_response",
        "parse_openai_stream_payload",
        "stream_openai_chunks",
        "stream_anthropic_chunks",
        "parse_anthropic_stream_event",
        "iter_sse_lines",
        "iter_anthropic_sse_events",
        "redact_text",
        "json_safe_content",
    ):
        assert callable(getattr(http_common, name)), name


async def test_groq_streamed_usage_under_x_groq() -> None:
    from avo_providers.openai_vendors import GroqProvider

    wire = OpenAIWire()
    events = wire.text_events("fast")
    final = {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    final["x_groq"] = {"id": "req_1", "usage": {"prompt_tokens": 11, "completion_tokens": 3}}
    async with ScriptedHTTPServer([ScriptedResponse.sse([*events, (None, final)])]) as server:
        provider = GroqProvider(cfg(server.url))
        response = await collect_stream(provider, conversation())
        await provider.aclose()
    assert response.content == "fast"
    assert response.usage == TokenUsage(input_tokens=11, output_tokens=3)


async def test_anthropic_compatible_server_sending_whole_tool_input_at_block_start() -> None:
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "z"}},
    }
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "usage": {}}}),
        ("content_block_start", start),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    async with ScriptedHTTPServer([ScriptedResponse.sse(events)]) as server:
        provider = AnthropicProvider(cfg(server.url))
        response = await collect_stream(provider, conversation())
        await provider.aclose()
    assert response.tool_call is not None
    assert response.tool_call.arguments == {"q": "z"}


@pytest.mark.parametrize("stream", [False, True])
async def test_gemini_thought_signature_goes_back_with_its_function_call(stream: bool) -> None:
    from pydantic import BaseModel

    from avo.policies import LoopPolicy
    from avo.runtime import AgentRuntime
    from avo.state import RunState
    from avo.tools import FunctionTool
    from avo_providers.wire_fakes import GeminiWire

    class Args(BaseModel):
        q: str

    wire = GeminiWire()
    part = {"functionCall": {"name": "lookup", "args": {"q": "x"}}, "thoughtSignature": "c2lnLTE="}
    body = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]}
    first = ScriptedResponse.sse([(None, body)]) if stream else ScriptedResponse.json(body)
    final = wire.text_stream("done", USAGE) if stream else wire.text("done", USAGE)
    tool = FunctionTool(
        name="lookup", description="Look up.", arguments_model=Args, function=lambda a: {"ok": 1}
    )
    async with ScriptedHTTPServer([first, final]) as server:
        provider = GeminiProvider(cfg(server.url))
        runtime = AgentRuntime(
            provider=provider,
            tools=[tool],
            policy=LoopPolicy(max_steps=3),
            stream_callback=(lambda _t: None) if stream else None,
        )
        result = await runtime.run("go")
        await provider.aclose()
    assert result.status is RunState.COMPLETED
    model_turn = server.requests[1].json()["contents"][-2]
    assert model_turn["parts"][0]["thoughtSignature"] == "c2lnLTE="
