"""The production shape: workers on a PostgreSQL event store (scripts/ensure-services.sh)."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporal_fleet import Fleet

from avo.compose import open_store
from avo.events import RunLogState

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


@pytest.fixture
def pg_fleet(tmp_path: Path, temporal_address: str) -> Iterator[tuple[Fleet, str, str]]:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip() or (
        DSN_FILE.read_text().strip() if DSN_FILE.is_file() else ""
    )
    if not dsn:
        pytest.skip(
            f"no PostgreSQL test server: run scripts/ensure-services.sh (writes {DSN_FILE})"
        )
    schema = f"avo_test_{uuid.uuid4().hex[:12]}"
    fleet = Fleet(
        tmp_path,
        temporal_address,
        store=dsn,
        store_settings=f'[store.settings]\nschema = "{schema}"\n',
    )
    try:
        yield fleet, dsn, schema
    finally:
        fleet.stop()
        asyncio.run(_drop(dsn, schema))


async def _drop(dsn: str, schema: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


async def _ledger_rows(dsn: str, schema: str) -> list[tuple[str, int]]:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(f'SELECT state, dispatch FROM "{schema}".avo_temporal_effects')
        return [(row["state"], row["dispatch"]) for row in rows]
    finally:
        await conn.close()


def test_runs_on_a_postgres_store_with_the_effect_ledger_in_its_schema(
    pg_fleet: tuple[Fleet, str, str],
) -> None:
    fleet, dsn, schema = pg_fleet
    fleet.write_config(calls=2)
    fleet.start_worker()
    result = json.loads(
        fleet.avo("run", "--engine", "temporal", "--json", "pg", timeout=180).stdout
    )
    assert result["status"] == "completed" and result["output"] == "pg done", fleet.logs()
    assert fleet.effects.read_text().splitlines() == ["pg 0", "pg 1"]
    assert asyncio.run(_ledger_rows(dsn, schema)) == [("done", 1), ("done", 1)]

    async def log() -> None:
        store = open_store(fleet.store, settings={"schema": schema})
        try:
            events = await store.get_events(result["run_id"])
            RunLogState.from_events(result["run_id"], events)
        finally:
            await store.close()

    asyncio.run(log())
