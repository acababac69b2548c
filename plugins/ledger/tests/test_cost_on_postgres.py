"""``avo cost`` when the event store is PostgreSQL (a real server from
scripts/ensure-services.sh, a fresh schema per test; skipped without one).

The ``ledger`` hook writes its rows to the default SQLite file when the store is
not SQLite; ``avo cost`` reads that file, and without one prices the store's
runs from their events, in the configured schema, cache savings included.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from avo.models import ModelResponse, TokenUsage
from avo.plugins.manager import PluginManager
from avo.pricing import price_book
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo_ledger import LedgerPlugin
from avo_ledger.cost import main as cost_main

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")
USAGE = TokenUsage(
    input_tokens=1250, output_tokens=100, cache_read_tokens=1000, cache_write_tokens=200
)
# claude-haiku-4-5 at catalog prices: 0.000900 USD, caching saved 0.000850 (test_event_cost)


@pytest.fixture
def pg() -> Iterator[tuple[str, str]]:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip() or (
        DSN_FILE.read_text().strip() if DSN_FILE.is_file() else ""
    )
    if not dsn:
        pytest.skip("no PostgreSQL test server: run scripts/ensure-services.sh")
    pytest.importorskip("avo_postgres")  # the store plugin (installed with the whole suite)
    schema = f"avo_test_{uuid.uuid4().hex[:12]}"
    yield dsn, schema
    import asyncpg

    async def drop() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await conn.close()

    asyncio.run(drop())


async def _one_run(dsn: str, schema: str, ledger: LedgerPlugin | None) -> str:
    from avo_postgres.store import PostgresEventStore

    store = PostgresEventStore(dsn, schema=schema)
    manager = PluginManager(autoload=False, environ={})
    if ledger is not None:
        manager.register(ledger, "ledger")
    response = ModelResponse(
        content="ok", usage=USAGE, provider="anthropic", model="claude-haiku-4-5"
    )
    try:
        runtime = AgentRuntime(
            provider=FakeProvider([response]), event_store=store, plugins=manager
        )
        return (await runtime.run("price me")).run_id
    finally:
        await store.close()
        if ledger is not None:
            ledger.close()


def _cost(tmp_path: Path, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cost_main(["-c", str(tmp_path / "avo.toml"), *args], environ={"HOME": str(tmp_path)})
    assert code == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


def test_avo_cost_reads_the_hooks_ledger_file_else_the_stores_events(
    pg: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn, schema = pg
    monkeypatch.chdir(tmp_path)
    (tmp_path / "avo.toml").write_text(
        f'[store]\nlocation = "{dsn}"\n[store.settings]\nschema = "{schema}"\n'
    )
    run_id = asyncio.run(_one_run(dsn, schema, None))
    # No ledger file: the runs of the configured schema, priced from their events.
    out, err = _cost(tmp_path, "--json")
    assert "pricing the store's runs from their events" in err
    [row] = json.loads(out)["runs"]
    assert (row["run_id"], row["cost_usd"], row["saving_usd"]) == (run_id, "0.000900", "0.000850")
    # With the hook's ledger (avo.db beside the config, where it writes for this store).
    ledger = LedgerPlugin(tmp_path / "avo.db", environ={}, book=price_book(environ={}))
    second = asyncio.run(_one_run(dsn, schema, ledger))
    out, err = _cost(tmp_path, "--json")
    assert err == ""
    report = json.loads(out)
    assert [run["run_id"] for run in report["runs"]] == [second]
    assert (report["cost_usd"], report["saved_usd"]) == ("0.000900", "0.000850")
