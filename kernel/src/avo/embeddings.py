"""Embeddings: the small contract between provider plugins and what searches by meaning.

A provider plugin that can embed text declares its embedding models in its
:class:`~avo.plugins.ProviderSpec` (``embeddings={"text-embedding-3-small": 1536}``,
name -> vector dimensions) and the objects its factory builds implement
:class:`EmbeddingProvider`::

    async def embed(self, texts: Sequence[str], *, model: str) -> list[list[float]]

:class:`Embedder` binds such an object to one declared model and checks what
comes back (one vector per text, each of the declared size, finite numbers),
so a memory store never indexes a malformed vector. ``avo.compose`` builds one
from ``[memory.embeddings]`` (see docs/memory.md).

:func:`hashing_embedding` is the deterministic bag-of-words vector the kernel's
``fake`` provider returns (model ``fake-embed``): texts sharing words are
close, with no model and no network, for tests and examples.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from avo.exceptions import MemoryStoreError

FAKE_EMBEDDING_MODEL = "fake-embed"
FAKE_EMBEDDING_DIMENSIONS = 64

_WORD = re.compile(r"\w+")


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Anything that turns texts into vectors with one of its declared models."""

    async def embed(self, texts: Sequence[str], *, model: str) -> list[list[float]]:
        """One vector per text, in order, each of the model's declared dimensions."""
        ...


@dataclass(frozen=True)
class Embedder:
    """An :class:`EmbeddingProvider` bound to one model of known dimensions."""

    provider: Any
    model: str
    dimensions: int
    name: str = ""
    """The provider plugin's name (for messages and records)."""

    def __post_init__(self) -> None:
        if self.dimensions <= 0:
            raise MemoryStoreError(
                f"embedding model {self.model!r} declares {self.dimensions} dimensions; "
                "declare a positive size in the provider's ProviderSpec.embeddings",
                provider=self.name or None,
            )
        if not callable(getattr(self.provider, "embed", None)):
            raise MemoryStoreError(
                f"provider {self.name or type(self.provider).__name__!r} has no embed() method; "
                "choose a provider plugin that declares embedding models",
                provider=self.name or None,
            )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts`` (checked: count, size, finite values)."""
        if not texts:
            return []
        vectors = await self.provider.embed(list(texts), model=self.model)
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
            raise MemoryStoreError(
                f"embedding model {self.model!r} returned {got} vectors for {len(texts)} texts",
                provider=self.name or None,
            )
        checked: list[list[float]] = []
        for vector in vectors:
            if len(vector) != self.dimensions:
                raise MemoryStoreError(
                    f"embedding model {self.model!r} returned a vector of {len(vector)} "
                    f"dimensions; it declares {self.dimensions}",
                    provider=self.name or None,
                )
            values = [float(x) for x in vector]
            if not all(math.isfinite(x) for x in values):
                raise MemoryStoreError(
                    f"embedding model {self.model!r} returned a vector with NaN or infinity",
                    provider=self.name or None,
                )
            checked.append(values)
        return checked

    async def embed_one(self, text: str) -> list[float]:
        """The vector of one text."""
        return (await self.embed([text]))[0]


def hashing_embedding(text: str, dimensions: int = FAKE_EMBEDDING_DIMENSIONS) -> list[float]:
    """A unit vector of hashed lower-cased words: equal texts give equal vectors.

    Deterministic across processes (BLAKE2b, not ``hash()``); an empty text gives
    the zero vector.
    """
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dimensions
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


__all__ = [
    "FAKE_EMBEDDING_DIMENSIONS",
    "FAKE_EMBEDDING_MODEL",
    "Embedder",
    "EmbeddingProvider",
    "cosine",
    "hashing_embedding",
]
