"""The effect ledger's claim: of two attempts of one dispatch running at once, one runs the tool."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest

from avo_temporal.effects import PostgresLedger, SQLiteLedger

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


async def _claims(ledger: SQLiteLedger | PostgresLedger) -> None:
    try:
        first, second = await asyncio.gather(
            ledger.started("run", "call", 1), ledger.started("run", "call", 1)
        )
        assert sorted([first, second]) == [False, True]  # one attempt runs the tool
        await ledger.done("run", "call", 1, {"ok": True})
        assert not await ledger.started("run", "call", 1)  # a late retry: done stays done
        entry = await ledger.get("run", "call")
        assert entry is not None and entry.state == "done" and entry.result == {"ok": True}
        assert await ledger.started("run", "call", 2)  # a person approved running it again
        entry = await ledger.get("run", "call")
        assert entry is not None and (entry.state, entry.dispatch) == ("started", 2)
    finally:
        await ledger.close()


def test_sqlite_ledger_claims_a_dispatch_once(tmp_path: Path) -> None:
    asyncio.run(_claims(SQLiteLedger(tmp_path / "runs.db")))


def test_postgres_ledger_claims_a_dispatch_once() -> None:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip() or (
        DSN_FILE.read_text().strip() if DSN_FILE.is_file() else ""
    )
    if not dsn:
        pytest.skip(f"no PostgreSQL test server: run scripts/ensure-services.sh ({DSN_FILE})")
    schema = f"avo_test_{uuid.uuid4().hex[:12]}"

    async def scenario() -> None:
        import asyncpg

        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(f'CREATE SCHEMA "{schema}"')
            await _claims(PostgresLedger(dsn, schema))
        finally:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            await conn.close()

    asyncio.run(scenario())
