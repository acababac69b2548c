"""Fixtures for the avo-postgres tests: a real PostgreSQL server, a fresh schema per test.

The server comes from ``AVO_TEST_POSTGRES_DSN`` or the file written by
``scripts/ensure-services.sh`` (``/tmp/avo-test-services/postgres.dsn``); with
neither, every test here is skipped with that reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


def find_dsn() -> str | None:
    """The test server's DSN, or None when no server was set up."""
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip()
    if dsn:
        return dsn
    if DSN_FILE.is_file():
        return DSN_FILE.read_text().strip() or None
    return None


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """The DSN of the test server (skips the test when there is none)."""
    dsn = find_dsn()
    if dsn is None:
        pytest.skip(
            "no PostgreSQL test server: set AVO_TEST_POSTGRES_DSN or run "
            f"scripts/ensure-services.sh (writes {DSN_FILE})"
        )
    return dsn


@pytest.fixture
async def pg_schema(pg_dsn: str) -> AsyncIterator[tuple[str, str]]:
    """(dsn, schema): a fresh, empty PostgreSQL schema for one test, dropped afterwards."""
    import asyncpg

    schema = f"avo_test_{uuid.uuid4().hex[:12]}"
    yield pg_dsn, schema
    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()
