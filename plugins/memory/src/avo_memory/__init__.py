"""avo-memory: long-term memory for avo runs.

- :class:`SQLiteMemory` (``[memory] provider = "sqlite"``, the default): one
  SQLite file, FTS5 full-text search ranked by BM25, blended with recency,
  deduplicated, per workspace or per user;
- :class:`PostgresMemory` (``provider = "postgres"``, extra ``[postgres]``):
  PostgreSQL full-text search, plus embedding search (pgvector when the
  server has it) with ``[memory.embeddings]``;
- ``avo memory list|search|forget``.

The kernel puts either to work in runs (``avo.memory_bundle``): recall through
the request seam, write-back of final answers and ``remember`` tool calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from avo_memory.records import MemoryRecord
from avo_memory.sqlite import SQLiteMemory

if TYPE_CHECKING:
    from avo_memory.postgres import PostgresMemory

__version__ = "1.0.0"


def __getattr__(name: str) -> Any:
    """``PostgresMemory`` is imported on first use (it needs asyncpg)."""
    if name == "PostgresMemory":
        from avo_memory.postgres import PostgresMemory

        return PostgresMemory
    raise AttributeError(f"module 'avo_memory' has no attribute {name!r}")


__all__ = ["MemoryRecord", "PostgresMemory", "SQLiteMemory"]
