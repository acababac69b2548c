"""Streaming primitives: chunks, thinking-tag splitting, lossless assembly.

A streaming provider yields :class:`ModelChunk` values. The runtime feeds them
to a :class:`StreamAssembler`, which rebuilds the exact :class:`ModelResponse`
that ``generate()`` would have returned:

* text fragments are concatenated in arrival order;
* tool-call deltas are grouped by ``index``; ``id``, ``name`` and
  ``signature`` keep their first non-empty value, ``arguments`` string
  fragments are concatenated and parsed as one JSON object when the stream
  ends;
* streamed tool calls win over text; every call is kept, in ``index`` order
  (a turn may ask for several calls);
* ``thinking_block`` chunks (complete reasoning blocks with their signatures)
  are kept in arrival order;
* usage is merged field by field: an incoming zero never overwrites a known
  nonzero count (vendors report input and output tokens in different events);
* the first ``response_id`` wins; the last ``finish_reason`` wins, read as a
  :class:`~avo.models.FinishReason` value (adapters map their vendor's
  spelling; ``tool_use`` is read as ``tool_calls``, anything else as
  ``unknown``).

:func:`response_to_chunks` is the inverse used by providers that cannot stream
natively (and by ``FakeProvider``): assembling its chunks, however they are
re-split, gives back the original response.

This module is on the runtime's per-step path, so the hot functions avoid
allocation: ``StreamAssembler.feed`` only appends to lists.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pydantic import JsonValue

from avo.exceptions import ProviderError
from avo.models import FinishReason, ModelRequest, ModelResponse, TokenUsage, ToolCall
from avo.providers.base import ModelProvider
from avo.redaction import redact_text, shorten


def _brief(raw: str) -> str:
    """Raw model text for an error message: key shapes masked first, then shortened."""
    return shorten(redact_text(raw, environ={}), 200)


THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

#: Channel names produced by :class:`ThinkingStreamParser`; they match the
#: :class:`ModelChunk` field each piece belongs in.
TEXT_CHANNEL = "text"
THOUGHT_CHANNEL = "thought"

FINISH_STOP = "stop"
FINISH_TOOL_USE = "tool_use"


@dataclass(frozen=True, slots=True)
class ModelChunk:
    """One increment of a streamed model response.

    ``tool_call_delta`` uses normalized keys: ``index`` (int, default 0),
    ``id``, ``name``, ``signature`` and ``arguments`` (a string fragment;
    fragments are concatenated in arrival order). ``thought`` is reasoning text
    to show as it arrives; ``thinking_block`` a complete reasoning block (as
    ``ModelResponse.thinking`` holds it) once the vendor finished it.
    ``finish_reason`` is a :class:`~avo.models.FinishReason` value.
    """

    text: str = ""
    thought: str = ""
    finish_reason: str | None = None
    tool_call_delta: dict[str, JsonValue] | None = None
    usage: TokenUsage | None = None
    response_id: str | None = None
    thinking_block: dict[str, JsonValue] | None = None


@runtime_checkable
class StreamingModelProvider(ModelProvider, Protocol):
    """A provider that can also stream a response as :class:`ModelChunk` values."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Yield the response to ``request`` chunk by chunk."""
        ...


# --------------------------------------------------------------------- thinking


def split_thinking(content: str) -> tuple[str, str]:
    """Split ``<think>…</think>`` spans out of ``content``: return ``(thought, answer)``.

    Every span between an opening and a closing tag goes to ``thought`` (spans
    are concatenated); everything else goes to ``answer``. An unclosed
    ``<think>`` sends the rest of the text to ``thought``. Nothing is stripped,
    so ``thought + answer`` holds every character except the tags.
    """
    if THINK_OPEN not in content:
        return "", content
    thought: list[str] = []
    answer: list[str] = []
    pos = 0
    length = len(content)
    while pos < length:
        start = content.find(THINK_OPEN, pos)
        if start < 0:
            answer.append(content[pos:])
            break
        answer.append(content[pos:start])
        body = start + len(THINK_OPEN)
        end = content.find(THINK_CLOSE, body)
        if end < 0:
            thought.append(content[body:])
            break
        thought.append(content[body:end])
        pos = end + len(THINK_CLOSE)
    return "".join(thought), "".join(answer)


def _partial_tag_suffix(data: str, tag: str) -> int:
    """Length of the longest suffix of ``data`` that is a proper prefix of ``tag``."""
    first = tag[0]
    start = max(0, len(data) - len(tag) + 1)
    while True:
        at = data.find(first, start)
        if at < 0:
            return 0
        if tag.startswith(data[at:]):
            return len(data) - at
        start = at + 1


class ThinkingStreamParser:
    """Incremental :func:`split_thinking`: tags may be split across chunks.

    ``feed(text)`` returns ``[(channel, text), ...]`` with channel ``"thought"``
    or ``"text"``; a possible partial tag at the end of a chunk is held back
    until the next chunk decides it. ``flush()`` releases what is held back.
    Feeding any split of a string, then flushing, yields per channel exactly
    what :func:`split_thinking` returns for the whole string.
    """

    __slots__ = ("_in_thought", "_pending")

    def __init__(self) -> None:
        self._in_thought = False
        self._pending = ""

    @property
    def in_thought(self) -> bool:
        """True while inside an open ``<think>`` span."""
        return self._in_thought

    def feed(self, text: str) -> list[tuple[str, str]]:
        """Consume ``text``; return the pieces that are now certain."""
        data = self._pending + text if self._pending else text
        self._pending = ""
        out: list[tuple[str, str]] = []
        pos = 0
        while True:
            tag = THINK_CLOSE if self._in_thought else THINK_OPEN
            at = data.find(tag, pos)
            if at < 0:
                break
            if at > pos:
                out.append((THOUGHT_CHANNEL if self._in_thought else TEXT_CHANNEL, data[pos:at]))
            self._in_thought = not self._in_thought
            pos = at + len(tag)
        rest = data[pos:] if pos else data
        if rest:
            held = _partial_tag_suffix(rest, THINK_CLOSE if self._in_thought else THINK_OPEN)
            if held:
                self._pending = rest[-held:]
                rest = rest[:-held]
            if rest:
                out.append((THOUGHT_CHANNEL if self._in_thought else TEXT_CHANNEL, rest))
        return out

    def flush(self) -> list[tuple[str, str]]:
        """Release held-back text (an unfinished tag is literal text)."""
        if not self._pending:
            return []
        pending, self._pending = self._pending, ""
        return [(THOUGHT_CHANNEL if self._in_thought else TEXT_CHANNEL, pending)]


# --------------------------------------------------------------------- assembly


class _CallBuffer:
    __slots__ = ("arguments", "call_id", "name", "signature", "whole_arguments")

    def __init__(self) -> None:
        self.call_id: str | None = None
        self.name: str | None = None
        self.signature: str | None = None
        self.arguments: list[str] = []
        self.whole_arguments: dict[str, JsonValue] | None = None


_FINISH_BY_VALUE: dict[str, FinishReason] = {reason.value: reason for reason in FinishReason}
_FINISH_BY_VALUE[FINISH_TOOL_USE] = FinishReason.TOOL_CALLS


def finish_reason_of(raw: str | None) -> FinishReason | None:
    """A streamed ``finish_reason`` as a FinishReason (``unknown`` when unrecognised)."""
    if raw is None:
        return None
    return _FINISH_BY_VALUE.get(raw, FinishReason.UNKNOWN)


def _merge_usage(known: TokenUsage | None, incoming: TokenUsage) -> TokenUsage:
    if known is None:
        return incoming
    # each count (cache and reasoning breakdowns too) from whichever chunk reported it
    mine, theirs = known.__dict__, incoming.__dict__
    merged = {key: theirs[key] or value for key, value in mine.items()}
    if merged == mine:
        return known
    return TokenUsage(**merged)


class StreamAssembler:
    """Rebuild a :class:`ModelResponse` from :class:`ModelChunk` values (lossless)."""

    __slots__ = (
        "_blocks",
        "_calls",
        "_chunks",
        "_text",
        "_thought",
        "finish_reason",
        "response_id",
        "usage",
    )

    def __init__(self) -> None:
        self._text: list[str] = []
        self._thought: list[str] = []
        self._blocks: list[dict[str, JsonValue]] = []
        self._calls: dict[int, _CallBuffer] = {}
        self._chunks = 0
        self.finish_reason: str | None = None
        self.response_id: str | None = None
        self.usage: TokenUsage | None = None

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return "".join(self._text)

    @property
    def thought(self) -> str:
        """The reasoning streamed so far on the thought channel."""
        return "".join(self._thought)

    @property
    def chunk_count(self) -> int:
        """How many chunks were fed."""
        return self._chunks

    def feed(self, chunk: ModelChunk) -> None:
        """Fold one chunk into the response being assembled."""
        self._chunks += 1
        if chunk.text:
            self._text.append(chunk.text)
        if chunk.thought:
            self._thought.append(chunk.thought)
        if chunk.tool_call_delta is not None:
            self._feed_delta(chunk.tool_call_delta)
        if chunk.usage is not None:
            self.usage = _merge_usage(self.usage, chunk.usage)
        if self.response_id is None and chunk.response_id:
            self.response_id = chunk.response_id
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        if chunk.thinking_block is not None:
            self._blocks.append(chunk.thinking_block)

    def _feed_delta(self, delta: dict[str, JsonValue]) -> None:
        index = delta.get("index", 0)
        if index is None:
            index = 0
        if not isinstance(index, int) or isinstance(index, bool):
            raise ProviderError(
                f"Streamed tool call delta has a non-integer index {index!r}.", retryable=False
            )
        buffer = self._calls.get(index)
        if buffer is None:
            buffer = self._calls[index] = _CallBuffer()
        call_id = delta.get("id")
        if call_id and buffer.call_id is None:
            buffer.call_id = str(call_id)
        name = delta.get("name")
        if name and buffer.name is None:
            buffer.name = str(name)
        signature = delta.get("signature")
        if signature and buffer.signature is None:
            buffer.signature = str(signature)
        arguments = delta.get("arguments")
        if isinstance(arguments, str):
            if arguments:
                buffer.arguments.append(arguments)
        elif isinstance(arguments, dict):
            buffer.whole_arguments = arguments
        elif arguments is not None:
            raise ProviderError(
                "Streamed tool call arguments must be string fragments or an object, "
                f"got {type(arguments).__name__}.",
                retryable=False,
            )

    def build(self) -> ModelResponse:
        """Return the assembled response; raise ProviderError if it is not one."""
        if not self._chunks:
            raise ProviderError("Stream ended without producing any chunks.")
        finish = finish_reason_of(self.finish_reason)
        blocks = list(self._blocks)
        if self._calls:
            cut = finish is FinishReason.LENGTH
            calls = [self._build_call(self._calls[index], cut) for index in sorted(self._calls)]
            if self.response_id is not None:
                return ModelResponse(
                    response_id=self.response_id,
                    tool_calls=calls,
                    usage=self.usage,
                    finish_reason=finish,
                    thinking=blocks,
                )
            return ModelResponse(
                tool_calls=calls, usage=self.usage, finish_reason=finish, thinking=blocks
            )
        content = "".join(self._text)
        if self.response_id is not None:
            return ModelResponse(
                response_id=self.response_id,
                content=content,
                usage=self.usage,
                finish_reason=finish,
                thinking=blocks,
            )
        return ModelResponse(
            content=content, usage=self.usage, finish_reason=finish, thinking=blocks
        )

    @staticmethod
    def _build_call(buffer: _CallBuffer, cut: bool = False) -> ToolCall:
        """The call ``buffer`` holds (``cut``: the stream ended at the output-token limit)."""
        if not buffer.name:
            raise ProviderError("Streamed tool call is missing a name.", retryable=False)
        arguments: dict[str, JsonValue]
        if buffer.arguments:
            raw = "".join(buffer.arguments)
            try:
                parsed = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                if cut:
                    raise ProviderError(
                        f"Streamed tool call {buffer.name!r} was cut off at the output-token "
                        f"limit (finish_reason=length) after {len(raw)} characters of "
                        "arguments; raise the provider's output-token limit",
                        retryable=False,
                    ) from None
                raise ProviderError(
                    f"Streamed tool call {buffer.name!r} has invalid JSON arguments "
                    f"({exc.msg} at position {exc.pos}): {_brief(raw)!r}",
                    retryable=False,
                ) from None
            if not isinstance(parsed, dict):
                raise ProviderError(
                    f"Streamed tool call {buffer.name!r} arguments must be a JSON object, "
                    f"got {type(parsed).__name__}: {_brief(raw)!r}",
                    retryable=False,
                )
            arguments = parsed
        elif buffer.whole_arguments is not None:
            arguments = buffer.whole_arguments
        else:
            arguments = {}
        if buffer.call_id:
            return ToolCall(
                tool_call_id=buffer.call_id,
                name=buffer.name,
                arguments=arguments,
                signature=buffer.signature,
            )
        return ToolCall(name=buffer.name, arguments=arguments, signature=buffer.signature)


# --------------------------------------------------------------------- helpers


def response_to_chunks(response: ModelResponse) -> list[ModelChunk]:
    """Decompose ``response`` into chunks that assemble back to it.

    The last chunk carries the response's ``finish_reason``, or, when it has
    none, ``"stop"`` for an answer and ``"tool_use"`` for tool calls (which
    assemble to STOP and TOOL_CALLS). Thinking blocks come first.
    """
    finish = response.finish_reason
    chunks = [
        ModelChunk(thinking_block=block, response_id=response.response_id)
        for block in response.thinking
    ]
    calls = response.tool_calls
    if not calls:
        chunks.append(
            ModelChunk(
                text=response.content or "",
                finish_reason=finish.value if finish is not None else FINISH_STOP,
                usage=response.usage,
                response_id=response.response_id,
            )
        )
        return chunks
    for index, call in enumerate(calls):
        delta: dict[str, JsonValue] = {
            "index": index,
            "name": call.name,
            "arguments": json.dumps(call.arguments, ensure_ascii=False),
        }
        if "tool_call_id" in call.model_fields_set:  # an id the model gave, not a default
            delta["id"] = call.tool_call_id
        if call.signature is not None:
            delta["signature"] = call.signature
        chunks.append(ModelChunk(tool_call_delta=delta, response_id=response.response_id))
    last = chunks[-1]
    chunks[-1] = ModelChunk(
        tool_call_delta=last.tool_call_delta,
        finish_reason=finish.value if finish is not None else FINISH_TOOL_USE,
        usage=response.usage,
        response_id=response.response_id,
    )
    return chunks


async def collect_stream(
    provider: StreamingModelProvider,
    request: ModelRequest,
    *,
    on_chunk: Callable[[ModelChunk], None] | None = None,
) -> ModelResponse:
    """Stream ``request`` from ``provider`` and return the assembled response.

    ``on_chunk`` (optional) sees every chunk as it arrives. The result equals
    what ``provider.generate(request)`` returns for a lossless provider.
    """
    assembler = StreamAssembler()
    feed = assembler.feed
    async for chunk in provider.stream(request):
        if on_chunk is not None:
            on_chunk(chunk)
        feed(chunk)
    return assembler.build()


__all__ = [
    "FINISH_STOP",
    "FINISH_TOOL_USE",
    "TEXT_CHANNEL",
    "THOUGHT_CHANNEL",
    "ModelChunk",
    "StreamAssembler",
    "StreamingModelProvider",
    "ThinkingStreamParser",
    "collect_stream",
    "finish_reason_of",
    "response_to_chunks",
    "split_thinking",
]
