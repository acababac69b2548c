"""Images and PDFs on the wire, per vendor family, through a real AgentRuntime run.

The user attaches a PNG and a PDF; the model calls a tool that returns an
image (``tool_content``); each vendor's loopback server then receives, on the
second request, the attachments and the tool's image in the shape that vendor
documents. Also: usage with cache and reasoning tokens read from each vendor's
own fields, and a text-only model refusing an image before anything is recorded.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo.content_blocks import ImageBlock, tool_content
from avo.exceptions import ContentNotSupportedError
from avo.models import TokenUsage
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo.storage.memory import InMemoryEventStore
from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse
from avo.tools import FunctionTool
from avo_providers.anthropic import AnthropicProvider
from avo_providers.base_http import ProviderConfig
from avo_providers.gemini import GeminiProvider
from avo_providers.media import responses_function_output, responses_parts
from avo_providers.ollama import OllamaProvider
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.openai_vendors import GroqProvider
from avo_providers.wire_fakes import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire

KEY = "sk-media-key-0123456789"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
SHOT = PNG + b"\x00"  # the tool's screenshot: other bytes than the attachment
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
B64_PNG = base64.b64encode(PNG).decode()
B64_SHOT = base64.b64encode(SHOT).decode()
B64_PDF = base64.b64encode(PDF).decode()
TASK = "What do these show?"
USAGE = TokenUsage(input_tokens=10, output_tokens=2)


class ShotArgs(BaseModel):
    page: int


def screenshot_tool() -> FunctionTool[ShotArgs]:
    return FunctionTool(
        name="screenshot",
        description="Screenshot a page.",
        arguments_model=ShotArgs,
        function=lambda args: tool_content(
            f"page {args.page}", ImageBlock.from_bytes(SHOT, "image/png", name="shot.png")
        ),
    )


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    png, pdf = tmp_path / "pixel.png", tmp_path / "report.pdf"
    png.write_bytes(PNG)
    pdf.write_bytes(PDF)
    return [png, pdf]


async def _run(provider: Any, files: list[Path], fallback: str = "refuse") -> Any:
    rt = AgentRuntime(
        provider=provider,
        tools=[screenshot_tool()],
        event_store=InMemoryEventStore(),
        media_fallback=fallback,
    )
    result = await rt.run(TASK, attachments=files)
    assert result.status is RunState.COMPLETED, result
    return result


def cfg(url: str, model: str) -> ProviderConfig:
    return ProviderConfig(model=model, api_key=KEY, base_url=url)


async def test_openai_chat_sends_image_url_and_file_parts_and_tool_images_after_results(
    files: list[Path],
) -> None:
    wire = OpenAIWire()
    script = [
        wire.tool_calls([("call_1", "screenshot", {"page": 2})], USAGE),
        wire.text("ok", USAGE),
    ]
    async with ScriptedHTTPServer(script) as server:
        await _run(OpenAICompatibleProvider(cfg(server.url, "gpt-4o")), files)
    messages = server.requests[1].json()["messages"]
    assert messages[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": TASK},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
            {
                "type": "file",
                "file": {
                    "filename": "report.pdf",
                    "file_data": f"data:application/pdf;base64,{B64_PDF}",
                },
            },
        ],
    }
    # A tool message holds text only: the image follows the batch's results.
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "page 2\n[1 attachment returned by this tool follow in the next message]",
    }
    assert messages[3] == {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_SHOT}"}}
        ],
    }


async def test_anthropic_sends_image_and_document_blocks_and_the_image_inside_tool_result(
    files: list[Path],
) -> None:
    wire = AnthropicWire()
    script = [
        wire.tool_calls([("toolu_1", "screenshot", {"page": 2})], USAGE),
        wire.text("ok", USAGE),
    ]
    async with ScriptedHTTPServer(script) as server:
        await _run(AnthropicProvider(cfg(server.url, "claude-sonnet-4-5")), files)
    messages = server.requests[1].json()["messages"]
    assert messages[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": TASK},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG},
            },
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PDF},
                "title": "report.pdf",
            },
        ],
    }
    result = messages[2]["content"][0]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {"type": "text", "text": "page 2"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": B64_SHOT},
            },
        ],
    }


async def test_gemini_sends_inline_data_and_the_image_in_function_response_parts(
    files: list[Path],
) -> None:
    wire = GeminiWire()
    script = [wire.tool_calls([("c1", "screenshot", {"page": 2})], USAGE), wire.text("ok", USAGE)]
    async with ScriptedHTTPServer(script) as server:
        await _run(GeminiProvider(cfg(server.url, "gemini-2.5-flash")), files)
    contents = server.requests[1].json()["contents"]
    assert contents[0] == {
        "role": "user",
        "parts": [
            {"text": TASK},
            {"inlineData": {"mimeType": "image/png", "data": B64_PNG}},
            {"inlineData": {"mimeType": "application/pdf", "data": B64_PDF}},
        ],
    }
    response = contents[2]["parts"][0]["functionResponse"]
    assert response["name"] == "screenshot"
    assert response["response"] == {"result": "page 2"}
    assert response["parts"] == [{"inlineData": {"mimeType": "image/png", "data": B64_SHOT}}]


async def test_ollama_sends_images_as_base64_and_the_pdf_as_a_placeholder(
    files: list[Path],
) -> None:
    wire = OllamaWire()
    script = [wire.tool_calls([("c1", "screenshot", {"page": 2})], USAGE), wire.text("ok", USAGE)]
    async with ScriptedHTTPServer(script) as server:
        await _run(OllamaProvider(cfg(server.url, "llava")), files, "placeholder")
    messages = server.requests[1].json()["messages"]
    user = messages[0]
    assert user["images"] == [B64_PNG]
    assert user["content"].startswith(TASK + "\n[document report.pdf: application/pdf, ")
    assert "not shown: the model does not read application/pdf documents" in user["content"]
    assert messages[2]["role"] == "tool"
    assert messages[2]["content"] == "page 2"
    assert messages[2]["images"] == [B64_SHOT]


def test_responses_style_input_parts_and_function_output() -> None:
    blocks = [
        {"type": "text", "text": TASK},
        {"type": "image", "media_type": "image/png", "data": B64_PNG},
        {"type": "document", "media_type": "application/pdf", "data": B64_PDF, "name": "r.pdf"},
        {"type": "image", "media_type": "image/png", "url": "https://example.com/a.png"},
    ]
    assert responses_parts(blocks) == [
        {"type": "input_text", "text": TASK},
        {"type": "input_image", "image_url": f"data:image/png;base64,{B64_PNG}", "detail": "auto"},
        {
            "type": "input_file",
            "filename": "r.pdf",
            "file_data": f"data:application/pdf;base64,{B64_PDF}",
        },
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
    ]
    item = responses_function_output("call_9", blocks[:2])
    assert item == {
        "type": "function_call_output",
        "call_id": "call_9",
        "output": [
            {"type": "input_text", "text": TASK},
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{B64_PNG}",
                "detail": "auto",
            },
        ],
    }
    assert responses_function_output("c", '{"ok": true}')["output"] == '{"ok": true}'


async def test_a_text_only_model_refuses_an_image_before_anything_is_recorded(
    files: list[Path],
) -> None:
    store = InMemoryEventStore()
    async with ScriptedHTTPServer([]) as server:
        rt = AgentRuntime(
            provider=GroqProvider(cfg(server.url, "llama-3.1-8b-instant")), event_store=store
        )
        with pytest.raises(ContentNotSupportedError) as caught:
            await rt.run(TASK, attachments=files[:1])
    assert "does not accept images" in str(caught.value)
    assert not server.requests
    assert await store.list_runs() == []


async def test_usage_reads_each_vendors_cache_and_reasoning_fields() -> None:
    from avo.models import ModelRequest

    request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
    openai_body = {
        "id": "x",
        "choices": [{"message": {"role": "assistant", "content": "a"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 1024},
            "completion_tokens_details": {"reasoning_tokens": 200},
        },
    }
    anthropic_body = {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 50,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 7,
        },
    }
    gemini_body = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "a"}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {
            "promptTokenCount": 900,
            "cachedContentTokenCount": 600,
            "candidatesTokenCount": 10,
            "thoughtsTokenCount": 40,
        },
    }
    script = [ScriptedResponse.json(b) for b in (openai_body, anthropic_body, gemini_body)]
    async with ScriptedHTTPServer(script) as server:
        openai = await OpenAICompatibleProvider(cfg(server.url, "gpt-4o")).generate(request)
        anthropic = await AnthropicProvider(cfg(server.url, "claude-haiku-4-5")).generate(request)
        gemini = await GeminiProvider(cfg(server.url, "gemini-2.5-pro")).generate(request)
    assert openai.usage == TokenUsage(
        input_tokens=1200, output_tokens=300, cache_read_tokens=1024, reasoning_tokens=200
    )
    assert anthropic.usage == TokenUsage(
        input_tokens=1250, output_tokens=7, cache_read_tokens=1000, cache_write_tokens=200
    )
    assert gemini.usage == TokenUsage(
        input_tokens=900, output_tokens=50, cache_read_tokens=600, reasoning_tokens=40
    )
    assert json.dumps(openai.usage.model_dump())  # plain JSON for events


async def test_a_streamed_anthropic_answer_keeps_its_cache_counts() -> None:
    from avo.models import ModelRequest
    from avo.providers.streaming import collect_stream

    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {
                "input_tokens": 20,
                "cache_read_input_tokens": 3000,
                "cache_creation_input_tokens": 500,
                "output_tokens": 1,
            },
        },
    }
    events = [
        ("message_start", start),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "hi"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
    async with ScriptedHTTPServer([ScriptedResponse.sse(events)]) as server:
        provider = AnthropicProvider(cfg(server.url, "claude-haiku-4-5"))
        response = await collect_stream(provider, request)
    assert response.usage == TokenUsage(
        input_tokens=3520, output_tokens=9, cache_read_tokens=3000, cache_write_tokens=500
    )
