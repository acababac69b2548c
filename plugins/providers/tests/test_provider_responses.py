"""The OpenAI Responses adapter through real runs on a loopback server speaking that API.

Requests are checked body by body: the transcript as input items (messages,
``function_call`` / ``function_call_output`` items, images and PDFs as input
parts), flat tools with ``strict`` off, ``tool_choice``, ``store: false`` with
``include: ["reasoning.encrypted_content"]`` and no ``previous_response_id``.
Reasoning items go back verbatim (also after a resume with a new provider);
usage keeps cached and reasoning tokens; errors are retried or not like the
Chat adapter's.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo.content_blocks import ImageBlock, tool_content
from avo.events import EventType
from avo.exceptions import ConfigError, ProviderError
from avo.models import FinishReason, ModelRequest, TokenUsage
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo.storage.memory import InMemoryEventStore
from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse
from avo.tools import FunctionTool
from avo_providers.base_http import ProviderConfig
from avo_providers.config import build_provider_from_env
from avo_providers.openai_responses import OpenAIResponsesProvider
from avo_providers.wire_fakes import ResponsesWire

KEY = "sk-responses-0123456789abcdef"
USAGE = TokenUsage(input_tokens=40, output_tokens=9)
WIRE = ResponsesWire()
REASONING = [
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Look the weather up."}],
        # opaque bytes the vendor decrypts: '+', '/', '=' and a key-shaped run inside
        "encrypted_content": base64.b64encode(b"sk-proj-" + bytes(range(256))).decode(),
    }
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


def provider(url: str, **kwargs: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(
        ProviderConfig(model="gpt-5-mini", api_key=KEY, base_url=url), **kwargs
    )


async def run(script: list[ScriptedResponse], *, stream: bool = False, **kwargs: Any) -> Any:
    async with ScriptedHTTPServer(script) as server:
        adapter = provider(server.url, **kwargs)
        runtime = AgentRuntime(
            provider=adapter,
            tools=[weather_tool()],
            stream_callback=(lambda _text: None) if stream else None,
        )
        result = await runtime.run("weather in Oslo?")
        await adapter.aclose()
    return result, [request.json() for request in server.requests], server


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
async def test_a_tool_run_sends_input_items_and_stateless_options(stream: bool) -> None:
    calls = [("call_1", "get_weather", {"city": "Oslo"})]
    first = (WIRE.tool_calls_stream if stream else WIRE.tool_calls)(calls, USAGE)
    final = (WIRE.text_stream if stream else WIRE.text)("Clear.", USAGE)
    result, (one, two), server = await run([first, final], stream=stream)
    assert (result.status, result.output) == (RunState.COMPLETED, "Clear.")
    assert all(request.path == "/responses" for request in server.requests)
    assert server.requests[0].header("authorization") == f"Bearer {KEY}"
    assert one["model"] == "gpt-5-mini"
    assert one["input"][-1] == {"role": "user", "content": "weather in Oslo?"}
    assert one["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": weather_tool().metadata.input_schema,
            "strict": False,
        }
    ]
    assert (one["tool_choice"], one["store"]) == ("auto", False)
    assert one["include"] == ["reasoning.encrypted_content"]
    assert one["max_output_tokens"] == 1024
    assert "previous_response_id" not in one and "previous_response_id" not in two
    assert one.get("stream", False) is stream
    call_item, output_item = two["input"][-2:]
    assert call_item == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city":"Oslo"}',
    }
    assert output_item["type"] == "function_call_output"
    assert output_item["call_id"] == "call_1"
    assert json.loads(output_item["output"]) == {"city": "Oslo", "sky": "clear"}


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
async def test_reasoning_items_go_back_verbatim_before_their_calls(stream: bool) -> None:
    calls = [
        ("call_1", "get_weather", {"city": "Oslo"}),
        ("call_2", "get_weather", {"city": "Rome"}),
    ]
    first = (WIRE.tool_calls_stream if stream else WIRE.tool_calls)(calls, USAGE, REASONING)
    final = (WIRE.text_stream if stream else WIRE.text)("Both clear.", USAGE)
    result, (_, two), _ = await run([first, final], stream=stream)
    assert result.status is RunState.COMPLETED, result.error
    items = two["input"]
    at = items.index(REASONING[0])  # byte for byte, encrypted_content intact
    assert [item.get("type") for item in items[at:]] == [
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert [item["call_id"] for item in items[at + 1 : at + 3]] == ["call_1", "call_2"]
    # paired with the reasoning by the ids the vendor gave the calls
    assert [item["id"] for item in items[at + 1 : at + 3]] == ["fc_0", "fc_1"]
    assert "source" not in json.dumps(two)  # the transcript's tag stays home


async def test_reasoning_items_survive_a_resume_in_a_new_provider() -> None:
    store = InMemoryEventStore()
    script = [
        WIRE.tool_calls([("call_1", "get_weather", {"city": "Oslo"})], USAGE, REASONING),
        WIRE.text("Clear.", USAGE),
    ]
    async with ScriptedHTTPServer(script) as server:
        first = provider(server.url)
        runtime = AgentRuntime(
            provider=first,
            tools=[weather_tool()],
            event_store=store,
            rate_limiter=DieBeforeSecondCall(),
        )
        with pytest.raises(Crash):
            await runtime.run("weather in Oslo?", run_id="r")
        await first.aclose()
        second = provider(server.url)
        resumed = AgentRuntime(provider=second, tools=[weather_tool()], event_store=store)
        result = await resumed.resume("r")
        await second.aclose()
    assert result.status is RunState.COMPLETED, result.error
    items = server.requests[-1].json()["input"]
    assert items[-3] == REASONING[0]
    assert items[-2]["call_id"] == "call_1"


async def test_an_answer_with_reasoning_goes_back_as_its_message_item() -> None:
    """A later turn (a session's next task) gets the answer's reasoning and message paired."""
    from avo_providers.openai_responses import parse_responses_response

    answer = parse_responses_response(json.loads(WIRE.text("Clear.", USAGE, REASONING).body))
    request = ModelRequest(
        run_id="r",
        step=2,
        messages=[
            {"role": "user", "content": "weather in Oslo?"},
            {"role": "assistant", "content": answer.content, "thinking": answer.thinking},
            {"role": "user", "content": "and tomorrow?"},
        ],
    )
    body = provider("http://127.0.0.1:9").build_payload(request, stream=False)
    assert body["input"][1:] == [
        REASONING[0],
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Clear.", "annotations": []}],
        },
        {"role": "user", "content": "and tomorrow?"},
    ]


async def test_another_adapters_thinking_is_not_sent() -> None:
    request = ModelRequest(
        run_id="r",
        step=2,
        messages=[
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "hello",
                "thinking": [
                    {"type": "thinking", "thinking": "x", "signature": "s", "source": "anthropic"}
                ],
            },
        ],
    )
    body = provider("http://127.0.0.1:9").build_payload(request, stream=False)
    assert body["input"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
async def test_usage_keeps_cached_and_reasoning_tokens(stream: bool) -> None:
    usage = TokenUsage(
        input_tokens=2000, output_tokens=300, cache_read_tokens=1536, reasoning_tokens=256
    )
    answer = (WIRE.text_stream if stream else WIRE.text)("Clear.", usage, REASONING)
    async with ScriptedHTTPServer([answer]) as server:
        adapter = provider(server.url)
        request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
        if stream:
            from avo.providers.streaming import collect_stream

            response = await collect_stream(adapter, request)
        else:
            response = await adapter.generate(request)
        await adapter.aclose()
    assert response.usage == usage
    assert response.content == "Clear."
    assert response.thinking == [
        {"type": "reasoning", "item": REASONING[0], "source": "openai-responses"},
        {
            "type": "output_order",
            "items": [{"reasoning": 0}, {"message": "msg_1"}],
            "source": "openai-responses",
        },
    ]


async def test_streamed_reasoning_summary_arrives_as_thoughts() -> None:
    thoughts: list[str] = []
    async with ScriptedHTTPServer([WIRE.text_stream("Clear.", USAGE, REASONING)]) as server:
        adapter = provider(server.url, reasoning_effort="high", reasoning_summary="auto")
        request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
        async for chunk in adapter.stream(request):
            thoughts.append(chunk.thought)
        await adapter.aclose()
    assert "".join(thoughts) == "Look the weather up."
    assert server.requests[0].json()["reasoning"] == {"effort": "high", "summary": "auto"}


async def test_tool_choice_names_a_tool_or_a_mode() -> None:
    final = [WIRE.tool_calls([("call_1", "get_weather", {"city": "Oslo"})], USAGE)]
    final.append(WIRE.text("Clear.", USAGE))
    _, (one, _), _ = await run(final, tool_choice="get_weather")
    assert one["tool_choice"] == {"type": "function", "name": "get_weather"}
    _, (one,), _ = await run([WIRE.text("Clear.", USAGE)], tool_choice="none")
    assert one["tool_choice"] == "none"


async def test_structured_output_uses_text_format() -> None:
    request = ModelRequest(
        run_id="r",
        step=1,
        messages=[{"role": "user", "content": "city?"}],
        output_schema={
            "title": "City",
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    body = provider("http://127.0.0.1:9").build_payload(request, stream=False)
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "City",
            "schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
            "strict": True,
        }
    }


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
async def test_incomplete_and_refused_answers_have_their_finish_reasons(stream: bool) -> None:
    truncated = (WIRE.truncated_answer_stream if stream else WIRE.truncated)("Sunny and", USAGE)
    refusal = (WIRE.refusal_stream if stream else WIRE.refusal)("I can't help.", USAGE)
    request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
    async with ScriptedHTTPServer([truncated, refusal]) as server:
        adapter = provider(server.url)
        got = []
        for _ in range(2):
            if stream:
                from avo.providers.streaming import collect_stream

                got.append(await collect_stream(adapter, request))
            else:
                got.append(await adapter.generate(request))
        await adapter.aclose()
    assert [(r.content, r.finish_reason) for r in got] == [
        ("Sunny and", FinishReason.LENGTH),
        ("I can't help.", FinishReason.REFUSAL),
    ]


async def test_a_429_with_retry_after_is_waited_out_and_recorded() -> None:
    limited = WIRE.error(429, "Rate limit reached", "rate_limit_exceeded")
    limited.headers = {**limited.headers, "retry-after": "1"}
    store = InMemoryEventStore()
    async with ScriptedHTTPServer(
        [limited, WIRE.error(503, "overloaded"), WIRE.text("ok", USAGE)]
    ) as server:
        adapter = provider(server.url)
        result = await AgentRuntime(provider=adapter, event_store=store).run("hi", run_id="r")
        await adapter.aclose()
    assert (result.status, result.output) == (RunState.COMPLETED, "ok")
    events = await store.get_events("r")
    failed = [e.payload for e in events if e.event_type is EventType.MODEL_FAILED]
    assert [f["status_code"] for f in failed] == [429, 503]
    assert failed[0]["retry_in_seconds"] == 1
    waited = server.requests[1].received_at - server.requests[0].received_at
    assert waited >= 0.95, f"retried after {waited:.3f}s, the vendor asked for 1s"


async def test_context_length_is_final_and_says_what_to_do() -> None:
    too_long = WIRE.error(
        400, "Your input exceeds the context window of this model.", "context_length_exceeded"
    )
    failed = WIRE.failed_stream("context_length_exceeded", "Input too long.")
    request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
    async with ScriptedHTTPServer([too_long, failed]) as server:
        adapter = provider(server.url)
        with pytest.raises(ProviderError) as plain:
            await adapter.generate(request)
        with pytest.raises(ProviderError) as streamed:
            async for _chunk in adapter.stream(request):
                pass
        await adapter.aclose()
    assert plain.value.retryable is False and plain.value.status_code == 400
    assert "exceeds the context window" in str(plain.value)
    assert streamed.value.retryable is False
    assert "context_length_exceeded" in str(streamed.value)
    assert "[context] window" in str(streamed.value)


async def test_a_failed_response_from_the_server_side_is_retryable() -> None:
    request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
    async with ScriptedHTTPServer([WIRE.failed("server_error", f"boom {KEY}")]) as server:
        adapter = provider(server.url)
        with pytest.raises(ProviderError) as info:
            await adapter.generate(request)
        await adapter.aclose()
    assert info.value.retryable is True
    assert "OpenAI" in str(info.value) and KEY not in str(info.value)


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


class ShotArgs(BaseModel):
    page: int


async def test_attachments_and_a_tools_image_as_input_parts(tmp_path: Path) -> None:
    png, pdf = tmp_path / "pixel.png", tmp_path / "report.pdf"
    png.write_bytes(PNG)
    pdf.write_bytes(PDF)
    shot = FunctionTool(
        name="screenshot",
        description="Screenshot a page.",
        arguments_model=ShotArgs,
        function=lambda args: tool_content(
            f"page {args.page}", ImageBlock.from_bytes(PNG, "image/png", name="shot.png")
        ),
    )
    script = [
        WIRE.tool_calls([("call_1", "screenshot", {"page": 2})], USAGE),
        WIRE.text("ok", USAGE),
    ]
    async with ScriptedHTTPServer(script) as server:
        adapter = provider(server.url)
        runtime = AgentRuntime(provider=adapter, tools=[shot], event_store=InMemoryEventStore())
        result = await runtime.run("What do these show?", attachments=[png, pdf])
        await adapter.aclose()
    assert result.status is RunState.COMPLETED, result.error
    items = server.requests[1].json()["input"]
    b64_png = base64.b64encode(PNG).decode()
    assert items[0] == {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What do these show?"},
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{b64_png}",
                "detail": "auto",
            },
            {
                "type": "input_file",
                "filename": "report.pdf",
                "file_data": "data:application/pdf;base64," + base64.b64encode(PDF).decode(),
            },
        ],
    }
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [
            {"type": "input_text", "text": "page 2"},
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{b64_png}",
                "detail": "auto",
            },
        ],
    }


def test_selected_from_the_environment_with_the_openai_variables() -> None:
    adapter = build_provider_from_env(
        {
            "AVO_PROVIDER": "openai-responses",
            "OPENAI_API_KEY": "sk-env-123456",
            "AVO_OPENAI_BASE_URL": "http://127.0.0.1:9/v1/",
            "AVO_OPENAI_MODEL": "o4-mini",
            "AVO_OPENAI_REASONING_EFFORT": "low",
            "AVO_OPENAI_TOOL_CHOICE": "required",
        }
    )
    assert isinstance(adapter, OpenAIResponsesProvider)
    assert (adapter.model, adapter.base_url) == ("o4-mini", "http://127.0.0.1:9/v1")
    assert (adapter.reasoning_effort, adapter.tool_choice) == ("low", "required")
    assert adapter.capabilities.thinking is True
    from avo_providers.doctor import doctor_report

    lines, ok = doctor_report(
        {"AVO_PROVIDER": "openai-responses", "OPENAI_API_KEY": "sk-env-123456"}
    )
    assert ok and "API style: openai-responses" in lines
    assert "endpoint: https://api.openai.com/v1/responses" in lines
    with pytest.raises(ConfigError) as info:
        build_provider_from_env(
            {
                "AVO_PROVIDER": "openai-responses",
                "AVO_OPENAI_API_KEY": "sk-env-123456",
                "AVO_OPENAI_REASONING_EFFORT": "extreme",
            }
        )
    assert str(info.value) == (
        "AVO_OPENAI_REASONING_EFFORT must be one of minimal, low, medium, high, got 'extreme'"
    )
    with pytest.raises(ConfigError) as info:
        build_provider_from_env({"AVO_PROVIDER": "openai-responses"})
    assert str(info.value) == "AVO_OPENAI_API_KEY is required when AVO_PROVIDER=openai-responses"


async def test_composed_from_avo_toml(tmp_path: Path) -> None:
    from avo.compose import compose

    with ScriptedHTTPServer([WIRE.text("composed", USAGE)]) as server:
        config = tmp_path / "avo.toml"
        config.write_text(
            '[provider]\nname = "openai-responses"\n[provider.settings]\n'
            f'base_url = "{server.url}"\nmodel = "gpt-5"\nmax_completion_tokens = 4096\n'
            'reasoning_effort = "minimal"\n'
        )
        composition = compose(
            config, environ={"AVO_OPENAI_API_KEY": "sk-compose-123456"}, store="memory"
        )
        async with composition:
            result = await composition.runtime.run("hello")
    assert (result.status, result.output) == (RunState.COMPLETED, "composed")
    body = server.requests[0].json()
    assert (body["model"], body["max_output_tokens"]) == ("gpt-5", 4096)
    assert body["reasoning"] == {"effort": "minimal"}


def test_listed_by_avo_models_and_priced_from_the_catalog() -> None:
    from avo.cli.models import catalog
    from avo.plugins.manager import PluginManager
    from avo.pricing import price_book

    manager = PluginManager(environ={})
    assert "openai-responses" in manager.names("provider")
    rows = {row["model"]: row for row in catalog(manager, "openai-responses")}
    assert rows["gpt-5-mini"]["cache_read_usd_per_million"] == "0.025"
    assert "thinking" in rows["gpt-5-mini"]["capabilities"]
    found, source = price_book(manager=manager).lookup("openai-responses", "gpt-5")
    assert source == "catalog" and found is not None


def test_encrypted_reasoning_is_asked_for_unless_the_model_does_not_reason() -> None:
    request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])

    def body(model: str) -> dict[str, Any]:
        config = ProviderConfig(model=model, api_key=KEY, base_url="http://127.0.0.1:9")
        return OpenAIResponsesProvider(config).build_payload(request, stream=False)

    assert body("gpt-5-mini")["include"] == ["reasoning.encrypted_content"]
    assert body("some-new-model")["include"] == ["reasoning.encrypted_content"]  # unknown: ask
    assert "include" not in body("gpt-4.1")  # the catalog says it does not reason
    assert body("gpt-4.1")["store"] is False


async def test_a_call_announced_without_its_id_gets_it_when_done() -> None:
    """Some servers announce a function call bare and complete it at output_item.done."""
    item = ResponsesWire.call_item(0, ("call_7", "get_weather", {"city": "Oslo"}))
    body = WIRE.response([item], USAGE)
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": {"id": "resp_1"}}),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "function_call", "arguments": ""},
            },
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": body}),
    ]
    request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
    async with ScriptedHTTPServer([ScriptedResponse.sse(events)]) as server:
        from avo.providers.streaming import collect_stream

        adapter = provider(server.url)
        response = await collect_stream(adapter, request)
        await adapter.aclose()
    [call] = response.tool_calls
    assert (call.tool_call_id, call.name, call.arguments) == (
        "call_7",
        "get_weather",
        {"city": "Oslo"},
    )
    assert response.finish_reason is FinishReason.TOOL_CALLS
