"""Fixtures for the avo-memory tests: a memory store of each kind on real databases.

PostgreSQL comes from ``AVO_TEST_POSTGRES_DSN`` or the file written by
``scripts/ensure-services.sh``; without either the PostgreSQL cases skip, saying so.
Every PostgreSQL test gets a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


def _find_dsn() -> str | None:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip()
    if dsn:
        return dsn
    if DSN_FILE.is_file():
        return DSN_FILE.read_text().strip() or None
    return None


@pytest.fixture
def pg_dsn() -> str:
    """The test server's DSN (skips when there is none)."""
    dsn = _find_dsn()
    if dsn is None:
        pytest.skip(
            "no PostgreSQL test server: set AVO_TEST_POSTGRES_DSN or run "
            f"scripts/ensure-services.sh (writes {DSN_FILE})"
        )
    return dsn


@pytest.fixture
async def pg_schema(pg_dsn: str) -> AsyncIterator[str]:
    """A fresh schema name for one test, dropped afterwards."""
    schema = f"avo_mem_{uuid.uuid4().hex[:12]}"
    yield schema
    await drop_schema(pg_dsn, schema)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def make_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[..., Any]]:
    """``make_store(scope=..., workspace=..., environ=..., clock=..., **settings)`` per kind."""
    opened: list[Any] = []
    kind = request.param
    if kind == "postgres":
        dsn = request.getfixturevalue("pg_dsn")
        schema = f"avo_mem_{uuid.uuid4().hex[:12]}"

    def make(
        *,
        scope: str = "workspace",
        workspace: str | Path | None = None,
        environ: dict[str, str] | None = None,
        clock: Any = None,
        embedder: Any = None,
        **settings: Any,
    ) -> Any:
        options: dict[str, Any] = {
            "scope": scope,
            "workspace": str(workspace or tmp_path),
            "environ": environ or {},
        }
        if clock is not None:
            options["clock"] = clock
        if kind == "sqlite":
            from avo_memory.settings import SQLiteMemorySettings
            from avo_memory.sqlite import SQLiteMemory

            store: Any = SQLiteMemory(
                tmp_path / "memory.db",
                settings=SQLiteMemorySettings.model_validate(settings),
                **options,
            )
        else:
            from avo_memory.postgres import PostgresMemory
            from avo_memory.settings import PostgresMemorySettings

            store = PostgresMemory(
                dsn,
                settings=PostgresMemorySettings.model_validate({"schema": schema, **settings}),
                embedder=embedder,
                **options,
            )
        opened.append(store)
        return store

    make.kind = kind  # type: ignore[attr-defined]
    yield make
    for store in opened:
        await store.close()
    if kind == "postgres":
        await drop_schema(dsn, schema)


async def drop_schema(dsn: str, schema: str) -> None:
    """Drop a test schema and everything in it."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()
