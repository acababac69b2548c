"""Images and documents in runs: typed blocks, attachments, tool results, blobs, capabilities."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from avo import AgentRuntime, EventType, FakeProvider, FunctionTool
from avo.blobs import BlobCache, InMemoryBlobStore, blob_id, resolve_block, store_blocks
from avo.content_blocks import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    attachment,
    parse_blocks,
    sniff_media_type,
    text_of,
    tool_content,
)
from avo.context_window import IMAGE_TOKENS, message_tokens
from avo.exceptions import ConfigError, ContentNotSupportedError, StorageError
from avo.models import ModelResponse, TokenUsage, ToolCall
from avo.plugins import ProviderCapabilities
from avo.storage.memory import InMemoryEventStore

# A 1x1 PNG and a one-page PDF header: real magic bytes, tiny files.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
TEXT_ONLY = ProviderCapabilities(streaming=True, tool_calls=True)


class NoArgs(BaseModel):
    pass


def _screenshot_tool() -> FunctionTool[NoArgs]:
    def shot(args: NoArgs) -> Any:
        return tool_content("the screen:", ImageBlock.from_bytes(PNG, "image/png", name="s.png"))

    return FunctionTool(
        name="screenshot", description="Take a screenshot.", arguments_model=NoArgs, function=shot
    )


def _script() -> list[Any]:
    return [
        ModelResponse(tool_call=ToolCall(name="screenshot", arguments={})),
        ModelResponse(content="I see one pixel"),
    ]


# ------------------------------------------------------------------ the typed model


def test_a_media_block_has_exactly_one_source_and_a_media_type() -> None:
    with pytest.raises(ValidationError, match="exactly one of data, url or blob; got none"):
        ImageBlock(media_type="image/png")
    with pytest.raises(ValidationError, match="exactly one of data, url or blob; got data, url"):
        ImageBlock(media_type="image/png", data="AAAA", url="https://x.test/a.png")
    with pytest.raises(ValidationError, match="needs a media_type"):
        DocumentBlock(data="AAAA")
    with pytest.raises(ValidationError, match="url must be http"):
        ImageBlock(url="file:///etc/passwd")
    assert ImageBlock(url="https://x.test/a.png").as_anthropic_source() == {
        "type": "url",
        "url": "https://x.test/a.png",
    }


def test_blocks_round_trip_as_transcript_dicts() -> None:
    message = Message(
        role="user",
        content=[
            TextBlock(text="read these"),
            ImageBlock.from_bytes(PNG, "image/png", name="a.png"),
            DocumentBlock.from_bytes(PDF, "application/pdf", name="r.pdf"),
        ],
    )
    as_dict = message.to_dict()
    assert as_dict["content"][1] == {  # type: ignore[index]
        "type": "image",
        "media_type": "image/png",
        "data": base64.b64encode(PNG).decode(),
        "size": len(PNG),
        "name": "a.png",
    }
    assert parse_blocks(as_dict["content"]) == message.content
    assert text_of(as_dict["content"]) == (
        "read these\n[image a.png: image/png, 70 bytes; not shown: text only here]\n"
        f"[document r.pdf: application/pdf, {len(PDF)} bytes; not shown: text only here]"
    )


def test_media_types_are_sniffed_from_bytes_then_names() -> None:
    assert sniff_media_type(PNG) == "image/png"
    assert sniff_media_type(PDF, "x.txt") == "application/pdf"
    assert sniff_media_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_media_type(b"# notes\n", "notes.md") == "text/markdown"
    assert sniff_media_type(b"plain words") == "text/plain"
    assert sniff_media_type(b"\x00\xff\xfe\x01binary") is None


def test_attachment_reads_files_and_names_bad_ones(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(PDF)
    (tmp_path / "notes.md").write_text("# hi\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\xff\xfe\x01" * 10)
    assert isinstance(attachment(tmp_path / "shot.png"), ImageBlock)
    pdf = attachment(tmp_path / "report.pdf")
    assert isinstance(pdf, DocumentBlock) and pdf.media_type == "application/pdf"
    assert attachment(tmp_path / "notes.md").media_type == "text/markdown"
    with pytest.raises(ConfigError, match=r"nope.png: no such file to attach; check the path"):
        attachment(tmp_path / "nope.png")
    with pytest.raises(ConfigError, match=r"is a directory; attach files one by one"):
        attachment(tmp_path)
    with pytest.raises(
        ConfigError, match=r"blob.bin: cannot attach application/octet-stream; attach PNG, JPEG"
    ):
        attachment(tmp_path / "blob.bin")
    with pytest.raises(ConfigError, match=r"70 bytes is larger than the 10 bytes an attachment"):
        attachment(tmp_path / "shot.png", max_bytes=10)


def test_tool_content_validates_its_blocks() -> None:
    made = tool_content("caption", ImageBlock.from_bytes(PNG, "image/png"))
    assert made["type"] == "content_blocks"
    assert [b["type"] for b in made["blocks"]] == ["text", "image"]  # type: ignore[index,union-attr]
    with pytest.raises(ValidationError):
        tool_content({"type": "image", "media_type": "image/png"})


# ------------------------------------------------------------------ blobs


async def test_blobs_are_content_addressed_and_resolved_back() -> None:
    store = InMemoryBlobStore()
    block = ImageBlock.from_bytes(PNG, "image/png").to_dict()
    stored = await store_blocks([block, block], store)
    assert (
        stored[0]
        == stored[1]
        == {
            "type": "image",
            "media_type": "image/png",
            "blob": blob_id(PNG),
            "size": len(PNG),
        }
    )
    assert len(store) == 1
    cache = BlobCache()
    assert await resolve_block(stored[0], store, cache) == {**block, "size": len(PNG)}
    assert cache.get(blob_id(PNG)) == base64.b64encode(PNG).decode()
    with pytest.raises(StorageError, match="not in this run's blob store"):
        await resolve_block({**stored[0], "blob": blob_id(b"other")}, store)
    with pytest.raises(StorageError, match="does not match the digest"):
        await store.put_blob(blob_id(b"a"), b"b", "image/png")


# ------------------------------------------------------------------ runs


def _events_text(events: list[Any]) -> str:
    return json.dumps([event.payload for event in events])


async def test_an_attached_image_reaches_the_model_and_is_stored_once() -> None:
    store = InMemoryEventStore()
    provider = FakeProvider(_script())
    runtime = AgentRuntime(provider=provider, tools=[_screenshot_tool()], event_store=store)
    result = await runtime.run(
        "what is in the picture?",
        attachments=[ImageBlock.from_bytes(PNG, "image/png", name="photo.png")],
    )
    assert result.status.value == "completed"
    first = provider.requests[0].messages[-1]
    assert first["content"][1]["data"] == base64.b64encode(PNG).decode()  # type: ignore[index]
    # The tool's image reaches the model in its tool message, as bytes.
    second = provider.requests[1].messages
    tool_message = next(m for m in second if m["role"] == "tool")
    assert tool_message["content"][0] == {"type": "text", "text": "the screen:"}  # type: ignore[index]
    assert tool_message["content"][1]["data"] == base64.b64encode(PNG).decode()  # type: ignore[index]
    # Events and checkpoints hold references only.
    events = await store.get_events(result.run_id)
    encoded = base64.b64encode(PNG).decode()
    assert encoded not in _events_text(events)
    checkpoint = await store.get_latest_checkpoint(result.run_id)
    assert checkpoint is not None and encoded not in json.dumps(checkpoint.messages)
    assert blob_id(PNG) in json.dumps(checkpoint.messages)
    created = events[0].payload
    assert created["attachments"] == [
        {
            "type": "image",
            "media_type": "image/png",
            "name": "photo.png",
            "size": 70,
            "blob": blob_id(PNG),
        }
    ]
    assert await store.get_blob(blob_id(PNG)) == PNG


async def test_an_attachment_a_text_only_model_cannot_take_is_refused_before_recording() -> None:
    store = InMemoryEventStore()
    provider = FakeProvider(_script(), capabilities=TEXT_ONLY)
    runtime = AgentRuntime(provider=provider, event_store=store)
    with pytest.raises(ContentNotSupportedError) as caught:
        await runtime.run(
            "look", attachments=[ImageBlock.from_bytes(PNG, "image/png", name="a.png")]
        )
    assert str(caught.value) == (
        "cannot attach the image a.png: fake: the model does not accept images; choose a model "
        'that accepts it (avo models), or set [media] fallback = "placeholder"'
    )
    assert await store.list_runs() == [] and provider.requests == []


async def test_with_the_placeholder_fallback_the_model_reads_a_line_instead() -> None:
    provider = FakeProvider(_script(), capabilities=TEXT_ONLY)
    runtime = AgentRuntime(
        provider=provider, tools=[_screenshot_tool()], media_fallback="placeholder"
    )
    result = await runtime.run(
        "look", attachments=[ImageBlock.from_bytes(PNG, "image/png", name="a.png")]
    )
    assert result.status.value == "completed"
    assert provider.requests[0].messages[-1]["content"] == [
        {"type": "text", "text": "look"},
        {
            "type": "text",
            "text": "[image a.png: image/png, 70 bytes; not shown: "
            "the model does not accept images]",
        },
    ]
    tool_message = next(m for m in provider.requests[1].messages if m["role"] == "tool")
    assert tool_message["content"][1] == {  # type: ignore[index]
        "type": "text",
        "text": "[image s.png: image/png, 70 bytes; not shown: the model does not accept images]",
    }


async def test_a_tool_image_for_a_text_only_model_is_a_placeholder_without_fallback() -> None:
    provider = FakeProvider(_script(), capabilities=TEXT_ONLY)
    runtime = AgentRuntime(provider=provider, tools=[_screenshot_tool()])
    result = await runtime.run("take a screenshot")
    assert result.status.value == "completed"
    tool_message = next(m for m in provider.requests[1].messages if m["role"] == "tool")
    assert "not shown: the model does not accept images" in json.dumps(tool_message)


async def test_a_text_document_reaches_a_model_without_document_support_as_text() -> None:
    caps = ProviderCapabilities(vision=True)
    provider = FakeProvider([ModelResponse(content="ok")], capabilities=caps)
    runtime = AgentRuntime(provider=provider)
    notes = DocumentBlock.from_bytes(b"line one\nline two\n", "text/plain", name="notes.txt")
    await runtime.run("summarise", attachments=[notes])
    assert provider.requests[0].messages[-1]["content"][1] == {  # type: ignore[index]
        "type": "text",
        "text": "[notes.txt (text/plain)]\nline one\nline two\n",
    }
    pdf = DocumentBlock.from_bytes(PDF, "application/pdf", name="r.pdf")
    with pytest.raises(ContentNotSupportedError, match="does not read application/pdf documents"):
        await AgentRuntime(provider=FakeProvider([], capabilities=caps)).run("x", attachments=[pdf])


async def test_attachments_may_be_paths(tmp_path: Path) -> None:
    (tmp_path / "r.pdf").write_bytes(PDF)
    provider = FakeProvider([ModelResponse(content="ok")])
    await AgentRuntime(provider=provider).run(
        "read", attachments=[tmp_path / "r.pdf", str(tmp_path / "r.pdf")]
    )
    blocks = provider.requests[0].messages[-1]["content"]
    assert [b["name"] for b in blocks[1:]] == ["r.pdf", "r.pdf"]  # type: ignore[index]
    assert blocks[1]["data"] == base64.b64encode(PDF).decode()  # type: ignore[index]


async def test_bad_tool_blocks_fail_the_call_naming_the_problem() -> None:
    def broken(args: NoArgs) -> Any:
        return {"type": "content_blocks", "blocks": [{"type": "image", "media_type": "image/png"}]}

    tool = FunctionTool(name="screenshot", description="d", arguments_model=NoArgs, function=broken)
    store = InMemoryEventStore()
    runtime = AgentRuntime(provider=FakeProvider(_script()), tools=[tool], event_store=store)
    result = await runtime.run("x")
    failed = [
        e for e in await store.get_events(result.run_id) if e.event_type is EventType.TOOL_FAILED
    ]
    assert (
        failed[0]
        .payload["error"]
        .startswith(
            "Tool 'screenshot' returned content blocks that are not valid: 0.image: Value error, "
            "a ImageBlock needs exactly one of data, url or blob"
        )
    )


def test_the_token_estimate_counts_an_image_not_its_base64() -> None:
    inline = {"role": "user", "content": [ImageBlock.from_bytes(PNG * 1000, "image/png").to_dict()]}
    ref = {
        "role": "user",
        "content": [{"type": "image", "media_type": "image/png", "blob": blob_id(PNG)}],
    }
    assert message_tokens(inline) == message_tokens(ref) == IMAGE_TOKENS + 4


def test_usage_breakdowns_add_up_and_stay_out_of_compact_dumps() -> None:
    from avo._dump import response_json, usage_json

    one = TokenUsage(input_tokens=100, output_tokens=10, cache_read_tokens=60, reasoning_tokens=4)
    two = TokenUsage(input_tokens=50, output_tokens=5, cache_write_tokens=20)
    total = one.plus(two)
    assert total == TokenUsage(
        input_tokens=150,
        output_tokens=15,
        cache_read_tokens=60,
        cache_write_tokens=20,
        reasoning_tokens=4,
    )
    assert total.uncached_input_tokens == 70
    assert usage_json(TokenUsage(input_tokens=3, output_tokens=4)) == {
        "input_tokens": 3,
        "output_tokens": 4,
    }
    response = ModelResponse(content="x", usage=one, provider="openai", model="gpt-4o")
    dumped = response_json(response)
    assert dumped["usage"] == {
        "input_tokens": 100,
        "output_tokens": 10,
        "cache_read_tokens": 60,
        "reasoning_tokens": 4,
    }
    assert ModelResponse.model_validate(dumped) == response
