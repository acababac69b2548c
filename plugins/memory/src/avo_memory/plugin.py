"""Entry points: memory plugins ``sqlite`` and ``postgres`` (group ``avo.memory``) and the
``avo memory`` command (group ``avo.commands``). Cheap to import: stores load on first use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from avo.plugins import MemorySpec, lazy_command, provides
from avo_memory.settings import PostgresMemorySettings, SQLiteMemorySettings


def _sqlite(
    settings: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    workspace: str,
    scope: str = "workspace",
) -> Any:
    from avo_memory.sqlite import open_sqlite_memory

    return open_sqlite_memory(settings, environ=environ, workspace=workspace, scope=scope)


def _postgres(
    settings: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    workspace: str,
    scope: str = "workspace",
    embedder: Any = None,
    store_location: str | None = None,
) -> Any:
    from avo_memory.postgres import open_postgres_memory

    return open_postgres_memory(
        settings,
        environ=environ,
        workspace=workspace,
        scope=scope,
        embedder=embedder,
        store_location=store_location,
    )


sqlite = provides(
    MemorySpec(
        name="sqlite",
        factory=_sqlite,
        description="Memories in a SQLite file: FTS5 full-text search, BM25 ranked, "
        "recency weighted, deduplicated (the default)",
        settings_model=SQLiteMemorySettings,
    )
)
postgres = provides(
    MemorySpec(
        name="postgres",
        factory=_postgres,
        description="Memories in PostgreSQL: full-text search, and embedding search "
        "(pgvector when installed) with [memory.embeddings]",
        settings_model=PostgresMemorySettings,
        embeddings=True,
    )
)
command = provides(
    lazy_command(
        "memory",
        "avo_memory.cli",
        help="list, search and forget long-term memories ([memory] in avo.toml)",
    )
)

__all__ = ["command", "postgres", "sqlite"]
