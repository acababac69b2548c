"""The suite's [store] table: trials of concurrent workers recorded in PostgreSQL.

A real server (``scripts/ensure-services.sh``); the suite names the store's schema,
``-d`` gives the DSN. Skipped when no server was set up.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("avo_postgres")
asyncpg = pytest.importorskip("asyncpg")

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")

SUITE = """
trials = 4
concurrency = 2
store = {{ settings = {{ schema = "{schema}" }} }}
[[cases]]
name = "answers"
task = "say done"
checks = [{{ answer_contains = "done" }}, {{ stop_reason = "completed" }}]
[cases.config.provider]
name = "fake"
settings = {{ script = [{{ content = "done" }}] }}
"""


def _dsn() -> str:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip()
    if not dsn and DSN_FILE.is_file():
        dsn = DSN_FILE.read_text().strip()
    if not dsn:
        pytest.skip("no PostgreSQL test server: run scripts/ensure-services.sh")
    return dsn


async def _tags(dsn: str, schema: str) -> list[Any]:
    from avo_postgres.store import PostgresEventStore

    store = PostgresEventStore(dsn, schema=schema)
    try:
        return [run.user_state["eval"] for run in await store.list_runs()]
    finally:
        await store.close()


async def _drop(dsn: str, schema: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


@pytest.mark.postgres
def test_trials_record_in_the_suites_store(avo: Any, tmp_path: Path) -> None:
    dsn = _dsn()
    schema = f"avo_eval_{uuid.uuid4().hex[:10]}"
    (tmp_path / "suite.toml").write_text(SUITE.format(schema=schema))
    try:
        done = avo("eval", "suite.toml", "-d", dsn, "--no-progress")
        assert done.returncode == 0, done.stdout + done.stderr
        data = json.loads((tmp_path / "eval-results.json").read_text())
        assert data["store"] == dsn and data["cases"][0]["passes"] == 4
        tags = asyncio.run(_tags(dsn, schema))
        assert sorted(tag["trial"] for tag in tags) == [1, 2, 3, 4]
        assert {tag["id"] for tag in tags} == {data["eval_id"]}
    finally:
        asyncio.run(_drop(dsn, schema))
