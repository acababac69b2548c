"""Streaming primitives: thinking split, lossless assembly, round trips."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avo.exceptions import ProviderError
from avo.models import FinishReason, ModelRequest, ModelResponse, TokenUsage, ToolCall
from avo.providers.base import ModelProvider
from avo.providers.streaming import (
    ModelChunk,
    StreamAssembler,
    StreamingModelProvider,
    ThinkingStreamParser,
    collect_stream,
    response_to_chunks,
    split_thinking,
)

# ------------------------------------------------------------------ ModelChunk


def test_model_chunk_defaults_and_frozen() -> None:
    chunk = ModelChunk()
    assert chunk.text == ""
    assert chunk.thought == ""
    assert chunk.finish_reason is None
    assert chunk.tool_call_delta is None
    assert chunk.usage is None
    assert chunk.response_id is None
    with pytest.raises(AttributeError):
        chunk.text = "x"  # type: ignore[misc]


# ------------------------------------------------------------------ split_thinking


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("plain answer", ("", "plain answer")),
        ("<think>why</think>answer", ("why", "answer")),
        ("<think>a</think>x<think>b</think>y", ("ab", "xy")),
        ("pre<think>unclosed", ("unclosed", "pre")),
        ("<think></think>", ("", "")),
        ("stray </think> close", ("", "stray </think> close")),
        ("<think>nested <think> stays</think>!", ("nested <think> stays", "!")),
        ("<thin>not a tag", ("", "<thin>not a tag")),
        ("", ("", "")),
    ],
)
def test_split_thinking(content: str, expected: tuple[str, str]) -> None:
    assert split_thinking(content) == expected


def _run_parser(pieces: list[str]) -> tuple[str, str]:
    parser = ThinkingStreamParser()
    out: list[tuple[str, str]] = []
    for piece in pieces:
        out.extend(parser.feed(piece))
    out.extend(parser.flush())
    for channel, text in out:
        assert channel in ("thought", "text")
        assert text, "the parser must not emit empty pieces"
    thought = "".join(text for channel, text in out if channel == "thought")
    answer = "".join(text for channel, text in out if channel == "text")
    return thought, answer


def test_parser_holds_back_a_tag_split_across_chunks() -> None:
    parser = ThinkingStreamParser()
    assert parser.feed("hello <th") == [("text", "hello ")]
    assert parser.feed("ink>deep") == [("thought", "deep")]
    assert parser.in_thought
    assert parser.feed(" thought</") == [("thought", " thought")]
    assert parser.feed("think> done") == [("text", " done")]
    assert parser.flush() == []


def test_parser_flushes_an_unfinished_tag_as_text() -> None:
    parser = ThinkingStreamParser()
    assert parser.feed("a <thi") == [("text", "a ")]
    assert parser.flush() == [("text", "<thi")]


def test_parser_one_character_at_a_time() -> None:
    content = "x<think>reason</think>answer<think>more"
    assert _run_parser(list(content)) == split_thinking(content)


_TAGGY = st.lists(
    st.sampled_from(["<think>", "</think>", "<", "<t", "</", "think>", "a", "b c", "é", "\n"]),
    max_size=30,
).map("".join)
_CONTENT = st.one_of(_TAGGY, st.text(max_size=60))


@st.composite
def _content_and_split(draw: st.DrawFn) -> tuple[str, list[str]]:
    content = draw(_CONTENT)
    cuts = sorted(draw(st.lists(st.integers(0, len(content)), max_size=12)))
    pieces: list[str] = []
    previous = 0
    for cut in [*cuts, len(content)]:
        pieces.append(content[previous:cut])
        previous = cut
    return content, pieces


@settings(max_examples=200, deadline=None)
@given(_content_and_split())
def test_parser_over_any_split_equals_split_thinking(case: tuple[str, list[str]]) -> None:
    content, pieces = case
    assert "".join(pieces) == content
    assert _run_parser(pieces) == split_thinking(content)


@settings(max_examples=200, deadline=None)
@given(_CONTENT)
def test_split_thinking_loses_only_the_tags(content: str) -> None:
    thought, answer = split_thinking(content)
    assert len(thought) + len(answer) <= len(content)
    if "<think>" not in content:
        assert (thought, answer) == ("", content)


# ------------------------------------------------------------------ StreamAssembler


def test_assembles_text_usage_and_first_response_id() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(text="Hel", response_id="r1", usage=TokenUsage(input_tokens=12)))
    assembler.feed(ModelChunk(text="lo", thought="hmm", response_id="r2"))
    assembler.feed(ModelChunk(usage=TokenUsage(input_tokens=0, output_tokens=5)))
    assembler.feed(ModelChunk(finish_reason="stop"))
    response = assembler.build()
    assert response.content == "Hello"
    assert response.tool_call is None
    assert response.response_id == "r1"
    assert response.usage == TokenUsage(input_tokens=12, output_tokens=5)
    assert assembler.thought == "hmm"
    assert assembler.finish_reason == "stop"
    assert assembler.chunk_count == 4


def test_usage_nonzero_incoming_replaces_known() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(text="x", usage=TokenUsage(input_tokens=3, output_tokens=1)))
    assembler.feed(ModelChunk(usage=TokenUsage(input_tokens=3, output_tokens=9)))
    assert assembler.build().usage == TokenUsage(input_tokens=3, output_tokens=9)


def test_no_usage_stays_none() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(text="x"))
    assert assembler.build().usage is None


def test_tool_call_wins_over_text_and_lowest_index_wins() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(text="Let me look."))
    assembler.feed(ModelChunk(tool_call_delta={"index": 1, "id": "c1", "name": "second"}))
    assembler.feed(ModelChunk(tool_call_delta={"index": 0, "id": "c0", "name": "first"}))
    assembler.feed(ModelChunk(tool_call_delta={"index": 0, "arguments": '{"pa'}))
    assembler.feed(ModelChunk(tool_call_delta={"index": 1, "arguments": "{}"}))
    assembler.feed(ModelChunk(tool_call_delta={"index": 0, "arguments": 'th": "a.py"}'}))
    response = assembler.build()
    assert response.content is None
    assert response.tool_call == ToolCall(
        tool_call_id="c0", name="first", arguments={"path": "a.py"}
    )


def test_tool_call_without_arguments_or_id() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(tool_call_delta={"name": "now"}))
    call = assembler.build().tool_call
    assert call is not None
    assert call.name == "now"
    assert call.arguments == {}
    assert call.tool_call_id  # a fresh id


def test_tool_call_whole_object_arguments() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(tool_call_delta={"name": "f", "arguments": {"k": [1, 2]}}))
    call = assembler.build().tool_call
    assert call is not None
    assert call.arguments == {"k": [1, 2]}


def test_missing_name_is_refused() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(tool_call_delta={"index": 0, "id": "c", "arguments": "{}"}))
    with pytest.raises(ProviderError) as info:
        assembler.build()
    assert str(info.value) == "Streamed tool call is missing a name."
    assert info.value.retryable is False


def test_invalid_json_is_refused_with_detail() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(tool_call_delta={"name": "grep", "arguments": '{"q": '}))
    with pytest.raises(ProviderError) as info:
        assembler.build()
    message = str(info.value)
    assert "'grep'" in message
    assert "invalid JSON" in message
    assert '{"q": ' in message
    assert info.value.retryable is False


def test_non_object_json_is_refused() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(tool_call_delta={"name": "grep", "arguments": "[1]"}))
    with pytest.raises(ProviderError, match="must be a JSON object, got list") as info:
        assembler.build()
    assert info.value.retryable is False


def test_bad_index_is_refused() -> None:
    assembler = StreamAssembler()
    with pytest.raises(ProviderError, match="non-integer index 'x'"):
        assembler.feed(ModelChunk(tool_call_delta={"index": "x", "name": "f"}))


def test_bad_arguments_type_is_refused() -> None:
    assembler = StreamAssembler()
    with pytest.raises(ProviderError, match="got int"):
        assembler.feed(ModelChunk(tool_call_delta={"name": "f", "arguments": 3}))


def test_empty_stream_is_refused() -> None:
    with pytest.raises(ProviderError, match="without producing any chunks"):
        StreamAssembler().build()


def test_empty_text_stream_is_an_empty_answer() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(finish_reason="stop"))
    assert assembler.build().content == ""


# ------------------------------------------------------------------ response_to_chunks


def test_response_to_chunks_finish_reasons() -> None:
    text = ModelResponse(content="hi")
    call = ModelResponse(tool_call=ToolCall(name="f", arguments={"a": 1}))
    assert response_to_chunks(text)[-1].finish_reason == "stop"
    assert response_to_chunks(call)[-1].finish_reason == "tool_use"
    assert response_to_chunks(text)[0].response_id == text.response_id


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
_USAGE = st.none() | st.builds(
    TokenUsage, input_tokens=st.integers(0, 10**6), output_tokens=st.integers(0, 10**6)
)
_FINISH = st.none() | st.sampled_from(FinishReason)
_BLOCKS = st.lists(
    st.fixed_dictionaries({"type": st.just("thinking"), "signature": st.text(max_size=6)}),
    max_size=2,
)
_RESPONSES = st.one_of(
    st.builds(
        ModelResponse,
        response_id=st.text(min_size=1, max_size=10),
        content=st.text(max_size=40),
        usage=_USAGE,
        finish_reason=_FINISH,
        thinking=_BLOCKS,
    ),
    st.builds(
        ModelResponse,
        response_id=st.text(min_size=1, max_size=10),
        tool_calls=st.lists(
            st.builds(
                ToolCall,
                tool_call_id=st.text(min_size=1, max_size=10),
                name=st.text(min_size=1, max_size=10),
                arguments=st.dictionaries(st.text(max_size=6), _JSON, max_size=4),
                signature=st.none() | st.text(min_size=1, max_size=6),
            ),
            min_size=1,
            max_size=3,
        ),
        usage=_USAGE,
        finish_reason=_FINISH,
        thinking=_BLOCKS,
    ),
)


def _as_streamed(response: ModelResponse) -> ModelResponse:
    """What a stream of ``response`` assembles to: a missing finish reason becomes the default."""
    if response.finish_reason is not None:
        return response
    default = FinishReason.TOOL_CALLS if response.tool_calls else FinishReason.STOP
    return response.model_copy(update={"finish_reason": default})


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces, previous = [], 0
    for point in [*points, len(text)]:
        pieces.append(text[previous:point])
        previous = point
    return pieces


def _rechunk(
    chunks: list[ModelChunk], draw: Callable[[st.SearchStrategy[Any]], Any]
) -> list[ModelChunk]:
    """Re-split chunks arbitrarily, the way a vendor stream might arrive."""
    out: list[ModelChunk] = []
    for chunk in chunks:
        cuts = draw(st.lists(st.integers(0, 64), max_size=6))
        if chunk.thinking_block is not None:
            out.append(ModelChunk(thinking_block=chunk.thinking_block))
        elif chunk.tool_call_delta is not None:
            delta = chunk.tool_call_delta
            index = delta["index"]
            args = str(delta["arguments"])
            if "id" in delta:
                out.append(ModelChunk(tool_call_delta={"index": index, "id": delta["id"]}))
            out.append(ModelChunk(tool_call_delta={"index": index, "name": delta["name"]}))
            if "signature" in delta:
                out.append(
                    ModelChunk(tool_call_delta={"index": index, "signature": delta["signature"]})
                )
            out.extend(
                ModelChunk(tool_call_delta={"index": index, "arguments": piece})
                for piece in _cut(args, cuts)
            )
        else:
            out.extend(ModelChunk(text=piece) for piece in _cut(chunk.text, cuts))
        # Vendors report usage in pieces: input first, output later.
        if chunk.usage is not None:
            out.insert(0, ModelChunk(usage=TokenUsage(input_tokens=chunk.usage.input_tokens)))
            out.append(ModelChunk(usage=TokenUsage(output_tokens=chunk.usage.output_tokens)))
            out.append(ModelChunk(usage=chunk.usage))
        out.insert(draw(st.integers(0, len(out))), ModelChunk(response_id=chunk.response_id))
        out.append(ModelChunk(response_id="later-id-ignored", finish_reason=chunk.finish_reason))
    return out


@settings(max_examples=200, deadline=None)
@given(_RESPONSES, st.data())
def test_round_trip_under_any_rechunking(response: ModelResponse, data: st.DataObject) -> None:
    chunks = _rechunk(response_to_chunks(response), data.draw)
    assembler = StreamAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    assert assembler.build() == _as_streamed(response)


@settings(max_examples=100, deadline=None)
@given(_RESPONSES)
def test_round_trip_of_plain_chunks(response: ModelResponse) -> None:
    assembler = StreamAssembler()
    for chunk in response_to_chunks(response):
        assembler.feed(chunk)
    assert assembler.build() == _as_streamed(response)


# ------------------------------------------------------------------ collect_stream


class _ScriptedStreamer:
    """A tiny streaming provider whose stream re-splits what generate returns."""

    def __init__(self, response: ModelResponse) -> None:
        self.response = response

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return self.response

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        for chunk in response_to_chunks(self.response):
            if chunk.tool_call_delta is not None:
                args = str(chunk.tool_call_delta["arguments"])
                yield ModelChunk(tool_call_delta={"name": chunk.tool_call_delta["name"]})
                if "id" in chunk.tool_call_delta:
                    yield ModelChunk(tool_call_delta={"id": chunk.tool_call_delta["id"]})
                for char in args:
                    yield ModelChunk(tool_call_delta={"arguments": char})
            for char in chunk.text:
                yield ModelChunk(text=char)
            yield ModelChunk(
                usage=chunk.usage, response_id=chunk.response_id, finish_reason=chunk.finish_reason
            )


def _request() -> ModelRequest:
    return ModelRequest(run_id="run", step=1, messages=[{"role": "user", "content": "go"}])


@pytest.mark.parametrize(
    "response",
    [
        ModelResponse(content="streamed answer", usage=TokenUsage(input_tokens=4, output_tokens=2)),
        ModelResponse(
            tool_call=ToolCall(
                tool_call_id="call_9", name="grep", arguments={"pattern": "é", "n": [1, 2.5]}
            )
        ),
    ],
)
async def test_collect_stream_equals_generate(response: ModelResponse) -> None:
    provider = _ScriptedStreamer(response)
    seen: list[ModelChunk] = []
    streamed = await collect_stream(provider, _request(), on_chunk=seen.append)
    assert streamed == _as_streamed(await provider.generate(_request()))
    assert len(seen) > 1


async def test_collect_stream_propagates_provider_errors() -> None:
    class Broken(_ScriptedStreamer):
        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
            yield ModelChunk(text="par")
            raise ProviderError("connection dropped")

    with pytest.raises(ProviderError, match="connection dropped"):
        await collect_stream(Broken(ModelResponse(content="x")), _request())


def test_streaming_protocol_is_runtime_checkable() -> None:
    class GenerateOnly:
        async def generate(self, request: ModelRequest) -> ModelResponse:
            return ModelResponse(content="x")

    streamer = _ScriptedStreamer(ModelResponse(content="x"))
    assert isinstance(streamer, StreamingModelProvider)
    assert isinstance(streamer, ModelProvider)
    assert not isinstance(GenerateOnly(), StreamingModelProvider)
    assert issubclass(StreamingModelProvider, ModelProvider)


def test_arguments_keep_non_ascii() -> None:
    call = ToolCall(name="f", arguments={"s": "ünïcode"})
    delta = response_to_chunks(ModelResponse(tool_call=call))[0].tool_call_delta
    assert delta is not None
    assert json.loads(str(delta["arguments"])) == {"s": "ünïcode"}


async def test_collect_stream_over_fake_provider_equals_generate() -> None:
    from avo.providers.fake import FakeProvider

    script = [
        ModelResponse(tool_call=ToolCall(name="read", arguments={"path": "a.py"})),
        ModelResponse(content="<think>checked</think>all good", usage=TokenUsage(input_tokens=3)),
    ]
    streamed_provider, plain_provider = FakeProvider(script), FakeProvider(script)
    for _ in script:
        streamed = await collect_stream(streamed_provider, _request())
        generated = await plain_provider.generate(_request())
        # A call id the script left to its default is no vendor's id: not streamed.
        assert streamed.model_dump(exclude={"tool_calls": {0: {"tool_call_id"}}}) == (
            generated.model_dump(exclude={"tool_calls": {0: {"tool_call_id"}}})
        )


async def test_runtime_streaming_records_the_same_responses_as_generate() -> None:
    from avo.events import EventType
    from avo.policies import LoopPolicy
    from avo.providers.fake import FakeProvider
    from avo.runtime import AgentRuntime

    script = [
        ModelResponse(tool_call=ToolCall(name="missing_tool", arguments={"q": "x"})),
        ModelResponse(content="final answer", usage=TokenUsage(input_tokens=5, output_tokens=2)),
    ]

    async def run(stream: bool) -> tuple[list[Any], list[str]]:
        seen: list[str] = []
        runtime = AgentRuntime(
            provider=FakeProvider(script),
            tools=[],
            policy=LoopPolicy(max_steps=5),
            stream_callback=seen.append if stream else None,
        )
        result = await runtime.run("go")
        events = await runtime.event_store.get_events(result.run_id)
        responses = [
            e.payload["response"] for e in events if e.event_type is EventType.MODEL_RESPONDED
        ]
        for response in responses:  # the kernel mints a fresh id for each call of each run
            for call in response.get("tool_calls", []):
                call["tool_call_id"] = "minted"
        return responses, seen

    streamed, pieces = await run(stream=True)
    generated, _ = await run(stream=False)
    assert streamed == generated
    assert "".join(pieces) == "final answer"


def test_a_call_cut_off_at_the_output_limit_says_so() -> None:
    assembler = StreamAssembler()
    assembler.feed(ModelChunk(tool_call_delta={"name": "write", "arguments": '{"text": "abc'}))
    assembler.feed(ModelChunk(finish_reason="length"))
    with pytest.raises(ProviderError) as info:
        assembler.build()
    assert str(info.value) == (
        "Streamed tool call 'write' was cut off at the output-token limit "
        "(finish_reason=length) after 13 characters of arguments; "
        "raise the provider's output-token limit"
    )
    assert info.value.retryable is False
