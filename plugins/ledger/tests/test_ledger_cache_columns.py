"""The token ledger keeps cache and reasoning tokens, and the default ``avo cost`` shows
what prompt caching saved: the runs and hand-computed figures of ``test_event_cost``
(``avo cost --events``), here through the ledger's rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sqlite3
from pathlib import Path

from avo.models import ModelResponse, TokenUsage
from avo.plugins.manager import PluginManager
from avo.pricing import price_book
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo_ledger import LedgerPlugin
from avo_ledger.cost import main as cost_main
from avo_sqlite import SQLiteEventStore, TokenLedger

CALLS = [
    (
        "anthropic",
        "claude-haiku-4-5",
        TokenUsage(
            input_tokens=1250, output_tokens=100, cache_read_tokens=1000, cache_write_tokens=200
        ),
    ),
    (
        "openai",
        "gpt-4o-mini",
        TokenUsage(
            input_tokens=2000, output_tokens=500, cache_read_tokens=1024, reasoning_tokens=200
        ),
    ),
    ("custom", "house-model", TokenUsage(input_tokens=1000, output_tokens=1000)),
    ("acme", "mystery-1", TokenUsage(input_tokens=10, output_tokens=10)),
]
# By hand (USD per million tokens; catalog prices as in test_event_cost):
#   haiku:   50 x 1 + 1000 x 0.10 + 200 x 1.25 + 100 x 5 = 900   -> 0.000900
#            saved: 1200 x 1 - (100 + 250) = 850                -> 0.000850
#   4o-mini: 976 x 0.15 + 1024 x 0.075 + 500 x 0.60 = 523.2     -> 0.000523
#            saved: 1024 x (0.15 - 0.075) = 76.8                 -> 0.000077
#   house ([pricing] $2 in, $4 out): 1000 x 2 + 1000 x 4 = 6000 -> 0.006000
#   total 0.0074232 -> 0.007423 (partial: mystery-1); saved 0.0009268 -> 0.000927
EXPECTED = ["0.000900", "0.000523", "0.006000", None]


async def _runs_with_ledger(db: Path) -> list[str]:
    manager = PluginManager(autoload=False, environ={})
    ledger = LedgerPlugin(db, environ={}, book=price_book(environ={}))
    manager.register(ledger, "ledger")
    store = SQLiteEventStore(db)
    ids = []
    try:
        for provider, model, usage in CALLS:
            fake = FakeProvider(
                [ModelResponse(content="ok", usage=usage, provider=provider, model=model)]
            )
            runtime = AgentRuntime(provider=fake, event_store=store, plugins=manager)
            ids.append((await runtime.run("price me")).run_id)
    finally:
        await store.close()
        ledger.close()
    return ids


def _cost(args: list[str], tmp_path: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cost_main(args, environ={"HOME": str(tmp_path)}) == 0
    return out.getvalue()


def test_rows_keep_cache_and_reasoning_tokens_and_avo_cost_shows_the_saving(
    tmp_path: Path,
) -> None:
    db = tmp_path / "avo.db"
    ids = asyncio.run(_runs_with_ledger(db))
    with TokenLedger(db) as ledger:
        entries = ledger.entries()
        total = ledger.total()
    assert [(e.provider, e.model, e.usage) for e in entries] == CALLS
    assert (total.cache_read_tokens, total.cache_write_tokens) == (2024, 200)
    assert total.reasoning_tokens == 200
    # Recorded at the catalog's prices, cache tokens at their own (house-model has
    # no price in any catalog and no [pricing] here, like mystery-1).
    assert [None if e.cost_usd is None else f"{e.cost_usd:.6f}" for e in entries] == [
        EXPECTED[0],
        EXPECTED[1],
        None,
        None,
    ]
    config = tmp_path / "avo.toml"
    config.write_text('[pricing."custom/house-model"]\ninput = "2"\noutput = "4"\n')
    args = ["-d", str(db), "-c", str(config)]
    report = json.loads(_cost([*args, "--json"], tmp_path))
    runs = {row["run_id"]: row for row in report["runs"]}
    assert [runs[run_id]["cost_usd"] for run_id in ids] == EXPECTED
    assert [runs[run_id]["saved_usd"] for run_id in ids] == ["0.000850", "0.000077", None, None]
    assert runs[ids[1]]["usage"]["reasoning_tokens"] == 200
    assert runs[ids[0]]["usage"]["cache_write_tokens"] == 200
    assert report["saved_usd"] == "0.000927"
    assert (report["cost_usd"], report["cost_partial"]) == ("0.007423", True)
    text = _cost(args, tmp_path).splitlines()
    assert text[2] == "Prompt cache: 2024 read / 200 written   Saved: 0.000927 USD"
    haiku = next(line for line in text if line.startswith(ids[0]))
    assert haiku.split()[1:7] == ["1", "1250", "1200", "100", "0.000900", "0.000850"]
    house = next(line for line in text if line.startswith(ids[2]))
    assert house.split()[5:7] == ["0.006000", "-"]  # no cached tokens: nothing saved


def test_an_older_ledger_file_gets_the_columns_and_keeps_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with TokenLedger(db):
        pass  # an avo file with the shared schema
    with sqlite3.connect(db) as conn:  # make it what an older avo-sqlite wrote
        conn.execute("DROP TABLE ledger_entries")
        conn.execute(
            "CREATE TABLE ledger_entries (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT "
            "NULL, step INTEGER NOT NULL, model TEXT, input_tokens INTEGER NOT NULL, "
            "output_tokens INTEGER NOT NULL, cost_usd TEXT, created_at TEXT NOT NULL)"
        )
        conn.execute(
            "INSERT INTO ledger_entries (run_id, step, model, input_tokens, output_tokens,"
            " cost_usd, created_at) VALUES ('old', 1, 'm', 10, 2, '0.5', '2026-01-01T00:00:00')"
        )
    db.chmod(0o400)
    try:  # read-only: nothing can be added, the old row reads with zero cache tokens
        with TokenLedger(db) as ledger:
            [old] = ledger.entries()
        assert (old.usage.input_tokens, old.usage.cache_read_tokens, old.provider) == (10, 0, None)
    finally:
        db.chmod(0o600)
    provider, model, usage = CALLS[0]
    with TokenLedger(db) as ledger:
        ledger.record("new", step=1, usage=usage, model=model, provider=provider)
        old, new = ledger.entries()
    assert old.usage.cache_read_tokens == 0 and str(old.cost_usd) == "0.5"
    assert (new.provider, new.usage) == (provider, usage)
    with sqlite3.connect(db) as conn:  # an older reader names its columns: still works
        rows = conn.execute(
            "SELECT id, run_id, step, model, input_tokens, output_tokens, cost_usd, created_at"
            " FROM ledger_entries ORDER BY id"
        ).fetchall()
    assert [row[1] for row in rows] == ["old", "new"]
