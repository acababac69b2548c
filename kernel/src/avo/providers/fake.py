"""FakeProvider: a scripted model, the test workhorse."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from avo._dump import response_json
from avo.exceptions import FakeProviderExhaustedError, ProviderError
from avo.models import FinishReason, ModelRequest, ModelResponse, TokenUsage, replaced, trusted

_ZERO_USAGE = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_read_tokens": 0,
    "cache_write_tokens": 0,
    "reasoning_tokens": 0,
}

if TYPE_CHECKING:
    from avo.plugins.specs import ProviderCapabilities
    from avo.providers.streaming import ModelChunk

ScriptItem = ModelResponse | Mapping[str, Any] | Exception
"""A scripted response, a mapping validated into one, or an exception to raise."""


def _script_item_to_json(item: ScriptItem) -> JsonValue:
    if isinstance(item, ModelResponse):
        return {"kind": "response", "value": response_json(item)}
    if isinstance(item, BaseException):
        return {"kind": "error", "type": type(item).__name__, "message": str(item)}
    return {"kind": "mapping", "value": dict(item)}


def _script_item_from_json(data: Any) -> ScriptItem:
    from avo.exceptions import ProviderError

    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "response":
        return ModelResponse.model_validate(data["value"])
    if kind == "mapping":
        return dict(data["value"])
    if kind == "error":
        return ProviderError(f"{data['type']}: {data['message']}")
    raise ValueError(f"unrecognised FakeProvider script item in snapshot: {data!r}")


class FakeProvider:
    """Returns scripted responses in order; scripted exceptions are raised.

    Every request is kept in ``requests`` for assertions; pass
    ``record_requests=False`` for long runs (each request holds the transcript).
    """

    name = "fake"
    model = "fake"

    def __init__(
        self,
        responses: Sequence[ScriptItem],
        *,
        repeat_last: bool = False,
        record_requests: bool = True,
        chunk_chars: int = 0,
        chunk_delay: float = 0.0,
        capabilities: ProviderCapabilities | None = None,
    ) -> None:
        if chunk_chars < 0 or chunk_delay < 0:
            raise ValueError(
                f"chunk_chars ({chunk_chars}) and chunk_delay ({chunk_delay}) must not be negative"
            )
        self.chunk_chars = chunk_chars
        self.chunk_delay = chunk_delay
        self._script: list[ScriptItem] = list(responses)
        self.record_requests = record_requests
        self.repeat_last = repeat_last
        self.cursor = 0
        self.requests: list[ModelRequest] = []
        self._script_json: list[JsonValue] | None = None
        self._capabilities = capabilities

    @property
    def capabilities(self) -> ProviderCapabilities:
        """What the fake model accepts: everything (images, PDFs and text, by bytes or
        URL) unless ``capabilities=`` says otherwise, to test a text-only model."""
        if self._capabilities is None:
            from avo.plugins.specs import ProviderCapabilities

            self._capabilities = ProviderCapabilities(
                streaming=True,
                tool_calls=True,
                parallel_tool_calls=True,
                vision=True,
                documents=("application/pdf", "text/plain", "text/markdown"),
                image_urls=True,
                document_urls=True,
            )
        return self._capabilities

    def _next_item(self) -> ScriptItem:
        if self.cursor < len(self._script):
            item = self._script[self.cursor]
            self.cursor += 1
            return item
        if self.repeat_last and self._script:
            return self._script[-1]
        raise FakeProviderExhaustedError(
            f"FakeProvider script is exhausted after {len(self._script)} responses"
        )

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Return the next scripted response.

        A response without usage gets ``TokenUsage()``, one without a finish
        reason ``stop`` (an answer) or ``tool_calls``. Call ids are served as
        scripted, repeats included: the runtime mints its own ids.
        """
        if self.record_requests:
            self.requests.append(request)
        item: Any = self._next_item()
        if isinstance(item, BaseException):
            raise item
        response = item if isinstance(item, ModelResponse) else ModelResponse.model_validate(item)
        fields = response.__dict__
        if fields["usage"] is not None and fields["finish_reason"] is not None:
            return response
        update: dict[str, Any] = {}
        if fields["usage"] is None:
            update["usage"] = trusted(TokenUsage, dict(_ZERO_USAGE))
        if fields["finish_reason"] is None:
            update["finish_reason"] = (
                FinishReason.TOOL_CALLS if fields["tool_calls"] else FinishReason.STOP
            )
        return replaced(response, **update)  # values already valid

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream the next scripted response as chunks.

        With ``chunk_chars`` the text arrives in pieces of that many characters,
        ``chunk_delay`` seconds apart (a model typing, for front ends and demos);
        they assemble to the same response.
        """
        from avo.providers.streaming import response_to_chunks

        response = await self.generate(request)
        chunks = response_to_chunks(response)
        if self.chunk_chars:
            chunks = _paced(chunks, self.chunk_chars)
        for index, chunk in enumerate(chunks):
            if index and self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            yield chunk

    async def embed(self, texts: Sequence[str], *, model: str = "fake-embed") -> list[list[float]]:
        """Deterministic bag-of-words vectors (model ``fake-embed``; see avo.embeddings).

        Not part of the script: embedding never consumes a scripted response.
        """
        from avo.embeddings import (
            FAKE_EMBEDDING_DIMENSIONS,
            FAKE_EMBEDDING_MODEL,
            hashing_embedding,
        )

        if model != FAKE_EMBEDDING_MODEL:
            raise ProviderError(
                f"the fake provider has no embedding model {model!r}; use {FAKE_EMBEDDING_MODEL!r}",
                retryable=False,
            )
        return [hashing_embedding(text, FAKE_EMBEDDING_DIMENSIONS) for text in texts]

    def reset(self) -> None:
        """Rewind the script and forget recorded requests."""
        self.cursor = 0
        self.requests.clear()

    def snapshot_state(self) -> dict[str, JsonValue]:
        """``{"provider_type": "fake", "cursor", "repeat_last", "script"}``.

        The script's JSON is computed once and shared between snapshots, so
        taking one per step costs O(1).
        """
        if self._script_json is None:
            self._script_json = [_script_item_to_json(item) for item in self._script]
        return {
            "provider_type": "fake",
            "cursor": self.cursor,
            "repeat_last": self.repeat_last,
            "script": self._script_json,
        }

    def restore_state(self, state: dict[str, JsonValue]) -> None:
        """Continue from a snapshot; refuses a snapshot of another provider type."""
        if state.get("provider_type") != "fake":
            raise ValueError(
                f"cannot restore a {state.get('provider_type')!r} snapshot into FakeProvider"
            )
        cursor = state.get("cursor")
        if not isinstance(cursor, int) or cursor < 0 or cursor > len(self._script):
            raise ValueError(
                f"snapshot cursor {cursor!r} does not fit a script of {len(self._script)} items"
            )
        self.cursor = cursor
        self.repeat_last = bool(state.get("repeat_last", self.repeat_last))

    @classmethod
    def from_snapshot(cls, state: Mapping[str, Any]) -> FakeProvider:
        """Rebuild a FakeProvider (script and cursor) from ``snapshot_state()``."""
        script = state.get("script")
        if state.get("provider_type") != "fake" or not isinstance(script, list):
            raise ValueError("not a FakeProvider snapshot (need provider_type 'fake' and a script)")
        provider = cls(
            [_script_item_from_json(item) for item in script],
            repeat_last=bool(state.get("repeat_last", False)),
        )
        provider.restore_state(dict(state))
        return provider


def _paced(chunks: list[ModelChunk], size: int) -> list[ModelChunk]:
    """``chunks`` with each text split into pieces of ``size`` characters (same assembly)."""
    from dataclasses import replace

    paced: list[ModelChunk] = []
    for chunk in chunks:
        text = chunk.text
        if len(text) <= size:
            paced.append(chunk)
            continue
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        paced.extend(
            replace(chunk, text=piece, finish_reason=None, usage=None) for piece in pieces[:-1]
        )
        paced.append(replace(chunk, text=pieces[-1]))
    return paced


__all__ = ["FakeProvider", "ScriptItem"]
