"""The fake provider can stream like a model types: pieces of N characters, spaced in time."""

from __future__ import annotations

import pytest

from avo._builtins import _make_fake_provider
from avo.models import ModelRequest
from avo.providers.fake import FakeProvider
from avo.providers.streaming import StreamAssembler


async def _chunks(provider: FakeProvider) -> list[object]:
    request = ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])
    return [chunk async for chunk in provider.stream(request)]


async def test_pieces_assemble_to_the_scripted_answer() -> None:
    answer = {"content": "hello there, world", "usage": {"input_tokens": 3, "output_tokens": 4}}
    provider = FakeProvider([answer], chunk_chars=5)
    chunks = await _chunks(provider)
    assert [c.text for c in chunks] == ["hello", " ther", "e, wo", "rld"]
    assert [c.finish_reason for c in chunks] == [None, None, None, "stop"]
    assembler = StreamAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    built = assembler.build()
    assert built.content == "hello there, world"
    assert built.usage is not None and built.usage.output_tokens == 4


async def test_settings_from_avo_toml_pace_the_stream() -> None:
    provider = _make_fake_provider(
        {"script": [{"content": "abcdef"}], "chunk_chars": 2, "chunk_delay_ms": 1}
    )
    assert provider.chunk_delay == pytest.approx(0.001)
    assert [c.text for c in await _chunks(provider)] == ["ab", "cd", "ef"]


async def test_a_tool_call_is_not_split() -> None:
    call = {"tool_call": {"name": "read_file", "arguments": {"path": "a"}}}
    chunks = await _chunks(FakeProvider([call], chunk_chars=1))
    assert len(chunks) == 1


def test_negative_pacing_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        FakeProvider([], chunk_chars=-1)
