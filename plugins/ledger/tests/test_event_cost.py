"""``avo cost --events`` on a mixed set of runs, against figures computed by hand.

Four runs in one SQLite store, each model call recorded with the vendor and
model that answered (the FakeProvider's responses name them, as a router's do):

* anthropic/claude-haiku-4-5 (catalog: $1 in, $5 out, $0.10 cache read, $1.25
  cache write per million): 1,250 input tokens of which 1,000 read from the
  cache and 200 written to it, 100 output tokens;
* openai/gpt-4o-mini (catalog: $0.15 in, $0.60 out, $0.075 cached): 2,000
  input of which 1,024 cached, 500 output (200 of them reasoning);
* custom/house-model, priced by ``[pricing]`` in avo.toml ($2 in, $4 out):
  1,000 in, 1,000 out;
* acme/mystery-1: no price anywhere, so the run is unpriced and the total partial.
"""

from __future__ import annotations

import asyncio
import io
import json
from decimal import Decimal
from pathlib import Path

from avo.models import ModelResponse, TokenUsage
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo_ledger.cost import main as cost_main
from avo_sqlite import SQLiteEventStore

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

# By hand, USD per million tokens:
#   haiku:  50 x 1 + 1000 x 0.10 + 200 x 1.25 + 100 x 5 = 900         -> 0.000900
#           saved: 1200 x 1 - (100 + 250) = 850                      -> 0.000850
#   4o-mini: 976 x 0.15 + 1024 x 0.075 + 500 x 0.60 = 523.2          -> 0.000523 (0.0005232)
#           saved: 1024 x (0.15 - 0.075) = 76.8                      -> 0.000077 (0.0000768)
#   house:  1000 x 2 + 1000 x 4 = 6000                               -> 0.006000
#   total:  0.0074232 -> 0.007423; saved 0.0009268 -> 0.000927
EXPECTED = ["0.000900", "0.000523", "0.006000", None]


async def _store_runs(db: Path) -> list[str]:
    store = SQLiteEventStore(db)
    ids = []
    try:
        for provider, model, usage in CALLS:
            fake = FakeProvider(
                [ModelResponse(content="ok", usage=usage, provider=provider, model=model)]
            )
            result = await AgentRuntime(provider=fake, event_store=store).run("price me")
            ids.append(result.run_id)
    finally:
        await store.close()
    return ids


def _cost(args: list[str], tmp_path: Path) -> str:
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cost_main(args, environ={"HOME": str(tmp_path)})
    assert code == 0
    return out.getvalue()


def test_a_mixed_set_of_runs_matches_hand_computed_figures(tmp_path: Path) -> None:
    db = tmp_path / "avo.db"
    ids = asyncio.run(_store_runs(db))
    config = tmp_path / "avo.toml"
    config.write_text('[pricing."custom/house-model"]\ninput = "2"\noutput = "4"\n')
    args = ["--events", "-d", str(db), "-c", str(config)]
    report = json.loads(_cost([*args, "--json"], tmp_path))
    runs = {row["run_id"]: row for row in report["runs"]}
    assert [runs[run_id]["cost_usd"] for run_id in ids] == EXPECTED
    assert [runs[run_id]["status"] for run_id in ids] == ["priced", "priced", "priced", "unpriced"]
    assert runs[ids[0]]["saving_usd"] == "0.000850"
    assert runs[ids[1]]["saving_usd"] == "0.000077"
    assert runs[ids[1]]["reasoning_tokens"] == 200
    assert runs[ids[1]]["cache_read_tokens"] == 1024
    assert report["total"] == {
        "runs": 4,
        "cost_usd": "0.007423",
        "saving_usd": "0.000927",
        "partial": True,
        "unpriced_runs": [ids[3]],
    }
    text = _cost(args, tmp_path)
    assert (
        "Total: 0.007423 USD over 4 runs; prompt caching saved 0.000927 USD; partial: 1 run "
        "not fully priced" in text
    )
    assert f"{ids[3]}: acme/mystery-1: no price" in text
    assert Decimal(runs[ids[2]]["cost_usd"]) == Decimal("0.006")
