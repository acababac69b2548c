"""The PostgreSQL memory store: full-text search, and embedding search when configured.

One table, ``<schema>.avo_memories``, created on first use. Its ``search``
column is a generated ``tsvector`` (the ``text_search_config``, English by
default: stemming and stopwords) under a GIN index; a recall ranks the
scope's matches with ``ts_rank`` (normalised by length) and re-ranks the
best ``candidates`` with recency, as the SQLite store does.

With an embedder (``[memory.embeddings]``) every memory is embedded when it is
written and a recall also looks for the memories nearest the query's vector,
so a memory can be found by meaning without sharing a word with the query.
Relevance is then ``(1 - vector_weight) * words + vector_weight * meaning``.
Vectors live in a ``vector(n)`` column with an HNSW index when the server has
the pgvector extension (``use_pgvector``: None detects it, True requires it);
without it they are kept as ``double precision[]`` and compared in SQL, which
is exact but scans the scope (fine for thousands of memories, not millions).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from avo.exceptions import MemoryStoreError
from avo.redaction import Redactor
from avo_memory.records import (
    MAX_CONTENT_CHARS,
    Clock,
    MemoryRecord,
    check_ids,
    digest,
    new_memory_id,
    query_terms,
    rerank,
    scope_key,
    tags_text,
)
from avo_memory.settings import PostgresMemorySettings

_COLUMNS = "memory_id, scope, content, tags, session_id, created_at, updated_at, hits"
_LOCK_KEY = 0x61766F6D656D  # "avomem": one table set-up at a time per database


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password masked (for error messages)."""
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return "<invalid DSN>"
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _record(row: Any) -> MemoryRecord:
    return MemoryRecord(
        memory_id=row["memory_id"],
        scope=row["scope"],
        content=row["content"],
        tags=tuple(json.loads(row["tags"]) if isinstance(row["tags"], str) else row["tags"]),
        session_id=row["session_id"],
        created_at=float(row["created_at"]),
        updated_at=float(row["updated_at"]),
        hits=int(row["hits"]),
    )


def _vector_text(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PostgresMemory:
    """A memory store in PostgreSQL (see the module docstring)."""

    name = "postgres"

    def __init__(
        self,
        dsn: str,
        *,
        scope: str = "workspace",
        workspace: str | None = None,
        settings: PostgresMemorySettings | None = None,
        embedder: Any = None,
        environ: Mapping[str, str] | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.dsn = dsn
        self.scope_name = scope
        self.scope = scope_key(scope, workspace)
        self.settings = settings or PostgresMemorySettings()
        self.embedder = embedder
        self.redactor = Redactor(environ=environ if environ is not None else {})
        self.clock = clock
        schema = self.settings.schema_name
        self.table = f'"{schema}".avo_memories'
        self._schema = schema
        self._pool: Any = None
        self._ready = asyncio.Lock()
        self.pgvector = False
        """True once the table keeps vectors in a pgvector column."""

    # ------------------------------------------------------------ connection and schema

    def _error(self, exc: BaseException, doing: str) -> MemoryStoreError:
        return MemoryStoreError(
            f"PostgreSQL memory at {redact_dsn(self.dsn)} could not {doing}: "
            f"{type(exc).__name__}: {exc}",
            provider=self.name,
        )

    async def _connection_pool(self) -> Any:
        if self._pool is not None:
            return self._pool
        async with self._ready:
            if self._pool is None:
                try:
                    import asyncpg
                except ImportError as exc:
                    raise MemoryStoreError(
                        "the postgres memory plugin needs asyncpg: "
                        "pip install 'avo-memory[postgres]'",
                        provider=self.name,
                    ) from exc
                try:
                    pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=4, timeout=10)
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                    raise self._error(exc, "connect (is the server up and the DSN right?)") from exc
                try:
                    async with pool.acquire() as conn:
                        await self._create(conn)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self._pool

    async def _create(self, conn: Any) -> None:
        import asyncpg

        config = self.settings.text_search_config
        try:
            async with conn.transaction():
                await conn.execute(f"SELECT pg_advisory_xact_lock({_LOCK_KEY})")
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self._schema}"')
                await conn.execute(
                    f"""CREATE TABLE IF NOT EXISTS {self.table} (
                        id bigserial PRIMARY KEY,
                        memory_id text NOT NULL UNIQUE,
                        scope text NOT NULL,
                        content text NOT NULL,
                        digest text NOT NULL,
                        tags jsonb NOT NULL DEFAULT '[]',
                        session_id text,
                        created_at double precision NOT NULL,
                        updated_at double precision NOT NULL,
                        hits integer NOT NULL DEFAULT 1,
                        search tsvector GENERATED ALWAYS AS
                            (to_tsvector('{config}'::regconfig, content)) STORED,
                        embedding_model text,
                        embedding double precision[],
                        UNIQUE (scope, digest)
                    )"""
                )
                await conn.execute(
                    f"CREATE INDEX IF NOT EXISTS avo_memories_search "
                    f"ON {self.table} USING gin (search)"
                )
                await conn.execute(
                    f"CREATE INDEX IF NOT EXISTS avo_memories_recent "
                    f"ON {self.table} (scope, updated_at DESC)"
                )
                if self.embedder is not None:
                    await self._vectors(conn)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise self._error(exc, "create its table") from exc

    async def _vectors(self, conn: Any) -> None:
        wanted = self.settings.use_pgvector
        if wanted is False:
            return
        available = await conn.fetchval(
            "SELECT installed_version IS NOT NULL OR default_version IS NOT NULL "
            "FROM pg_available_extensions WHERE name = 'vector'"
        )
        if not available:
            if wanted:
                raise MemoryStoreError(
                    f"use_pgvector = true, but the server at {redact_dsn(self.dsn)} has no "
                    "pgvector extension; install it (postgresql-NN-pgvector) or set "
                    "use_pgvector = false",
                    provider=self.name,
                )
            return
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        dims = int(self.embedder.dimensions)
        column = await conn.fetchval(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = $1::regclass AND attname = 'embedding_v' AND NOT attisdropped",
            self.table,
        )
        if column is None:
            await conn.execute(f"ALTER TABLE {self.table} ADD COLUMN embedding_v vector({dims})")
            await conn.execute(
                f"CREATE INDEX IF NOT EXISTS avo_memories_vectors ON {self.table} "
                "USING hnsw (embedding_v vector_cosine_ops)"
            )
        elif column != f"vector({dims})":
            raise MemoryStoreError(
                f"the memory table {self.table} keeps {column} embeddings, but "
                f"{self.embedder.model!r} makes {dims} dimensions; use another schema "
                "([memory.settings] schema) for this embedding model",
                provider=self.name,
            )
        self.pgvector = True

    async def _run(self, doing: str, function: Any, *args: Any) -> Any:
        import asyncpg

        pool = await self._connection_pool()
        try:
            async with pool.acquire() as conn:
                return await function(conn, *args)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise self._error(exc, doing) from exc

    async def close(self) -> None:
        """Close the connection pool (the next call opens a new one)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # ------------------------------------------------------------ MemoryProvider

    async def remember(
        self, content: str, *, session_id: str, tags: Sequence[str] | None = None
    ) -> MemoryRecord:
        """Store ``content`` (redacted, embedded when configured); equal memories merge."""
        text = self.redactor.text(content.strip())
        if not text:
            raise MemoryStoreError("an empty memory cannot be stored; give it some text")
        if len(text) > MAX_CONTENT_CHARS:
            text = text[: MAX_CONTENT_CHARS - 1].rstrip() + "…"
        vector = await self.embedder.embed_one(text) if self.embedder is not None else None
        record: MemoryRecord = await self._run(
            "store a memory", self._remember, text, session_id, tags_text(tags), vector
        )
        return record

    async def _remember(
        self,
        conn: Any,
        text: str,
        session_id: str,
        tags: tuple[str, ...],
        vector: list[float] | None,
    ) -> MemoryRecord:
        now = self.clock()
        model = self.embedder.model if vector is not None else None
        args: list[Any] = [
            new_memory_id(),
            self.scope,
            text,
            digest(text),
            json.dumps(list(tags)),
            session_id,
            now,
            model,
        ]
        if self.pgvector:  # the vector goes to the pgvector column only
            args += [None, _vector_text(vector) if vector is not None else None]
            extra_column, extra_value = ", embedding_v", ", $10::vector"
            extra_update = ", embedding_v = coalesce(m.embedding_v, EXCLUDED.embedding_v)"
        else:
            args.append(vector)
            extra_column = extra_value = extra_update = ""
        row = await conn.fetchrow(
            f"""INSERT INTO {self.table} AS m (memory_id, scope, content, digest, tags, session_id,
                    created_at, updated_at, embedding_model, embedding{extra_column})
                VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $7, $8, $9::float8[]{extra_value})
                ON CONFLICT (scope, digest) DO UPDATE SET
                    updated_at = EXCLUDED.updated_at,
                    hits = m.hits + 1,
                    session_id = EXCLUDED.session_id,
                    tags = (SELECT coalesce(jsonb_agg(DISTINCT t), '[]'::jsonb)
                            FROM jsonb_array_elements(m.tags || EXCLUDED.tags) AS t),
                    embedding_model = coalesce(m.embedding_model, EXCLUDED.embedding_model),
                    embedding = coalesce(m.embedding, EXCLUDED.embedding){extra_update}
                RETURNING {_COLUMNS}""",
            *args,
        )
        return _record(row)

    async def recall(self, query: str, *, k: int = 5) -> list[MemoryRecord]:
        """Up to ``k`` memories of this scope relevant to ``query``, best first."""
        terms = query_terms(query)
        if k <= 0 or (not terms and self.embedder is None):
            return []
        vector = None
        if self.embedder is not None and query.strip():
            vector = await self.embedder.embed_one(query)
        found: list[MemoryRecord] = await self._run(
            "recall memories", self._recall, terms, vector, k
        )
        return found

    async def _recall(
        self, conn: Any, terms: list[str], vector: list[float] | None, k: int
    ) -> list[MemoryRecord]:
        limit = max(self.settings.candidates, k)
        words: dict[str, tuple[MemoryRecord, float]] = {}
        if terms:
            rows = await conn.fetch(
                f"""SELECT {_COLUMNS}, ts_rank(search, q, 1) AS rank
                    FROM {self.table}, websearch_to_tsquery($1::regconfig, $2) AS q
                    WHERE scope = $3 AND search @@ q
                    ORDER BY rank DESC, updated_at DESC LIMIT $4""",
                self.settings.text_search_config,
                " or ".join(terms),
                self.scope,
                limit,
            )
            words = {row["memory_id"]: (_record(row), float(row["rank"])) for row in rows}
        meaning: dict[str, tuple[MemoryRecord, float]] = {}
        if vector is not None:
            meaning = await self._nearest(conn, vector, limit)
        best_words = max((rank for _, rank in words.values()), default=0.0) or 1.0
        weight = self.settings.vector_weight if vector is not None else 0.0
        candidates = []
        for memory_id in {**words, **meaning}:
            record = (words.get(memory_id) or meaning[memory_id])[0]
            text_score = words[memory_id][1] / best_words if memory_id in words else 0.0
            similarity = max(meaning[memory_id][1], 0.0) if memory_id in meaning else 0.0
            candidates.append((record, (1.0 - weight) * text_score + weight * similarity))
        return rerank(
            candidates,
            k=k,
            now=self.clock(),
            recency_weight=self.settings.recency_weight,
            half_life_days=self.settings.half_life_days,
        )

    async def _nearest(
        self, conn: Any, vector: list[float], limit: int
    ) -> dict[str, tuple[MemoryRecord, float]]:
        model = self.embedder.model
        if self.pgvector:
            rows = await conn.fetch(
                f"""SELECT {_COLUMNS}, 1 - (embedding_v <=> $1::vector) AS similarity
                    FROM {self.table}
                    WHERE scope = $2 AND embedding_model = $3 AND embedding_v IS NOT NULL
                    ORDER BY embedding_v <=> $1::vector LIMIT $4""",
                _vector_text(vector),
                self.scope,
                model,
                limit,
            )
        else:
            rows = await conn.fetch(
                f"""SELECT {_COLUMNS}, s.similarity FROM {self.table} AS m,
                    LATERAL (SELECT sum(x * y) / nullif(sqrt(sum(x * x)) * sqrt(sum(y * y)), 0)
                             AS similarity FROM unnest(m.embedding, $1::float8[]) AS v(x, y)) AS s
                    WHERE m.scope = $2 AND m.embedding_model = $3 AND m.embedding IS NOT NULL
                    ORDER BY s.similarity DESC NULLS LAST LIMIT $4""",
                vector,
                self.scope,
                model,
                limit,
            )
        return {row["memory_id"]: (_record(row), float(row["similarity"] or 0.0)) for row in rows}

    # ------------------------------------------------------------ ManagedMemory

    async def list_memories(self, *, limit: int = 50, offset: int = 0) -> list[MemoryRecord]:
        """This scope's memories, most recently written first."""

        async def fetch(conn: Any) -> list[MemoryRecord]:
            rows = await conn.fetch(
                f"SELECT {_COLUMNS} FROM {self.table} WHERE scope = $1 "
                "ORDER BY updated_at DESC, id DESC LIMIT $2 OFFSET $3",
                self.scope,
                max(limit, 0),
                max(offset, 0),
            )
            return [_record(row) for row in rows]

        found: list[MemoryRecord] = await self._run("list memories", fetch)
        return found

    async def count(self) -> int:
        """How many memories this scope holds."""

        async def fetch(conn: Any) -> int:
            query = f"SELECT count(*) FROM {self.table} WHERE scope = $1"
            return int(await conn.fetchval(query, self.scope))

        total: int = await self._run("count memories", fetch)
        return total

    async def forget(self, memory_ids: Sequence[str]) -> int:
        """Delete memories of this scope by id or unique id prefix; return how many."""
        wanted = check_ids(memory_ids)
        if not wanted:
            return 0

        async def delete(conn: Any) -> int:
            async with conn.transaction():
                found: list[str] = []
                for text in wanted:
                    pattern = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                    rows = await conn.fetch(
                        f"SELECT memory_id FROM {self.table} WHERE scope = $1 "
                        "AND memory_id LIKE $2 LIMIT 2",
                        self.scope,
                        pattern + "%",
                    )
                    if len(rows) > 1:
                        raise MemoryStoreError(
                            f"memory id prefix {text!r} matches more than one memory; give "
                            "more characters of the id"
                        )
                    if not rows:
                        raise MemoryStoreError(
                            f"no memory {text!r} in this scope ({self.scope_name}); "
                            "avo memory list shows the ids"
                        )
                    found.append(rows[0]["memory_id"])
                result = await conn.execute(
                    f"DELETE FROM {self.table} WHERE memory_id = ANY($1::text[])", found
                )
                return int(result.split()[-1])

        removed: int = await self._run("forget memories", delete)
        return removed


def open_postgres_memory(
    settings: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    workspace: str,
    scope: str = "workspace",
    embedder: Any = None,
    store_location: str | None = None,
) -> PostgresMemory:
    """The ``postgres`` memory plugin's factory."""
    parsed = PostgresMemorySettings.model_validate(dict(settings))
    dsn = parsed.dsn or environ.get("AVO_MEMORY_DSN", "").strip()
    if not dsn and store_location and store_location.startswith(("postgresql://", "postgres://")):
        dsn = store_location
    if not dsn:
        raise MemoryStoreError(
            "the postgres memory plugin needs a database: set [memory.settings] dsn "
            "(postgresql://USER@HOST:PORT/DB), AVO_MEMORY_DSN, or use a PostgreSQL event store",
            provider="postgres",
        )
    if not dsn.startswith(("postgresql://", "postgres://")):
        raise MemoryStoreError(
            f"invalid PostgreSQL DSN {redact_dsn(dsn)!r} for memory; expected "
            "postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE",
            provider="postgres",
        )
    return PostgresMemory(
        dsn,
        scope=scope,
        workspace=workspace,
        settings=parsed,
        embedder=embedder,
        environ=environ,
    )


__all__ = ["PostgresMemory", "open_postgres_memory", "redact_dsn"]
