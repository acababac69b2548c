"""PostgreSQL memory searched by meaning: vectors from a provider that declares embeddings.

The vectors here come from a scripted embedding provider (a few words on
fixed axes), so a memory can be the nearest by meaning while sharing no word
with the query. Without pgvector on the server the vectors are compared in
SQL; with it (``use_pgvector``) they live in a ``vector(n)`` column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from avo.embeddings import Embedder
from avo.exceptions import MemoryStoreError
from avo_memory.postgres import PostgresMemory
from avo_memory.settings import PostgresMemorySettings

pytestmark = pytest.mark.postgres

AXES = {"kitten": 0, "cat": 0, "feline": 0, "car": 1, "engine": 1, "invoice": 2, "bill": 2}


class ScriptedEmbeddings:
    """Meaning on three axes: animals, vehicles, money (an embedding provider's contract)."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str], *, model: str) -> list[list[float]]:
        assert model == "axes-3"
        self.calls.append(list(texts))
        vectors = []
        for text in texts:
            vector = [0.05, 0.05, 0.05]
            for word in text.lower().replace(".", " ").split():
                if word in AXES:
                    vector[AXES[word]] += 1.0
            norm = math.sqrt(sum(x * x for x in vector))
            vectors.append([x / norm for x in vector])
        return vectors


async def _server_has_pgvector(dsn: str) -> bool:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        return bool(
            await conn.fetchval("SELECT count(*) FROM pg_available_extensions WHERE name='vector'")
        )
    finally:
        await conn.close()


def _store(
    dsn: str, schema: str, provider: ScriptedEmbeddings, **settings: object
) -> PostgresMemory:
    return PostgresMemory(
        dsn,
        workspace="/tmp/project",
        settings=PostgresMemorySettings.model_validate({"schema": schema, **settings}),
        embedder=Embedder(provider, "axes-3", 3, name="scripted"),
    )


async def test_a_memory_is_found_by_meaning_without_a_shared_word(
    pg_dsn: str, pg_schema: str
) -> None:
    provider = ScriptedEmbeddings()
    store = _store(pg_dsn, pg_schema, provider, use_pgvector=False)
    try:
        await store.remember("Our cat is called Tom", session_id="s")
        await store.remember("The car needs a new engine", session_id="s")
        await store.remember("Send the invoice on Monday", session_id="s")
        found = await store.recall("kitten", k=1)
        assert [r.content for r in found] == ["Our cat is called Tom"]
        # words and meaning together: "engine" matches a word and the vehicle axis
        assert (await store.recall("engine trouble", k=1))[0].content.startswith("The car")
        assert ["kitten"] in provider.calls  # the query was embedded
        # dedup keeps the first vector; a memory written before embeddings is filled in
        again = await store.remember("our cat is called tom", session_id="t")
        assert again.hits == 2
    finally:
        await store.close()


async def test_only_words_count_with_vector_weight_zero(pg_dsn: str, pg_schema: str) -> None:
    store = _store(pg_dsn, pg_schema, ScriptedEmbeddings(), use_pgvector=False, vector_weight=0.0)
    try:
        await store.remember("Our cat is called Tom", session_id="s")
        assert await store.recall("kitten", k=1) == []
    finally:
        await store.close()


async def test_pgvector_when_the_server_has_it(pg_dsn: str, pg_schema: str) -> None:
    provider = ScriptedEmbeddings()
    if not await _server_has_pgvector(pg_dsn):
        store = _store(pg_dsn, pg_schema, provider, use_pgvector=True)
        with pytest.raises(MemoryStoreError, match="has no pgvector extension"):
            await store.remember("Our cat is called Tom", session_id="s")
        await store.close()
        pytest.skip("this PostgreSQL server has no pgvector extension (Debian 12 ships none)")
    store = _store(pg_dsn, pg_schema, provider)
    try:
        await store.remember("Our cat is called Tom", session_id="s")
        await store.remember("The car needs a new engine", session_id="s")
        assert store.pgvector
        assert [r.content for r in await store.recall("kitten", k=1)] == ["Our cat is called Tom"]
    finally:
        await store.close()


async def test_vectors_of_the_wrong_size_are_refused(pg_dsn: str, pg_schema: str) -> None:
    class Wrong:
        async def embed(self, texts: Sequence[str], *, model: str) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

    store = PostgresMemory(
        pg_dsn,
        workspace="/tmp/project",
        settings=PostgresMemorySettings.model_validate({"schema": pg_schema}),
        embedder=Embedder(Wrong(), "axes-3", 3, name="wrong"),
    )
    try:
        with pytest.raises(MemoryStoreError, match="vector of 2 dimensions; it declares 3"):
            await store.remember("Our cat is called Tom", session_id="s")
    finally:
        await store.close()
