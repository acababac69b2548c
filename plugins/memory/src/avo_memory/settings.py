"""The ``[memory.settings]`` tables of the two memory plugins."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Ranking(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recency_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    """How much recency counts against text relevance (0: not at all, 1: only recency)."""
    half_life_days: float = Field(default=30.0, gt=0.0)
    """A memory last written this many days ago counts half as recent as a new one."""
    candidates: int = Field(default=50, ge=1, le=1000)
    """How many of the best text matches are re-ranked with recency."""


class SQLiteMemorySettings(_Ranking):
    """``provider = "sqlite"``: one SQLite file with an FTS5 index."""

    distinctive_matches: int = Field(default=1_000, ge=10, le=100_000)
    """A word found in at most this many memories is distinctive: recall ranks the memories
    holding distinctive words by BM25. Commoner words only pick among recent memories."""
    recent_window: int = Field(default=2_000, ge=100, le=1_000_000)
    """How many of the newest memories a query made of common words looks through."""
    path: str | None = None
    """The database file (default ``$AVO_MEMORY_DIR/memory.db``, else ``~/.avo/memory.db``);
    a relative path is taken from the workspace."""


class PostgresMemorySettings(_Ranking):
    """``provider = "postgres"``: a table in PostgreSQL (full-text search, pgvector)."""

    dsn: str | None = None
    """The database (default: ``AVO_MEMORY_DSN``, else the event store when it is PostgreSQL)."""
    schema_name: str = Field(default="public", alias="schema", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The schema holding the ``avo_memories`` table."""
    text_search_config: str = Field(default="english", pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    """The PostgreSQL text search configuration (stemming, stopwords)."""
    vector_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    """With embeddings: how much meaning (cosine similarity) counts against words."""
    use_pgvector: bool | None = None
    """None: use the pgvector extension when the server has it; False: never; True: require it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


__all__ = ["PostgresMemorySettings", "SQLiteMemorySettings"]
