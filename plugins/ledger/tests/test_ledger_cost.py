"""A run with a ledger and rates set, then `avo cost` showing tokens and dollars matching events."""

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal

import pytest

from avo.events import EventType
from avo.exceptions import StorageError
from avo.models import ModelResponse, TokenUsage, ToolCall
from avo.plugins import ProviderSpec
from avo.plugins.manager import PluginManager
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.usage import estimate_cost
from avo_ledger import LedgerPlugin, aggregate_costs, pricing_from_plugins
from avo_ledger.cost import main as cost_main
from avo_sqlite import SQLiteEventStore, TokenLedger

RATES_ENV = {"AVO_USAGE_RATES_INPUT_PER_1K": "0.003", "AVO_USAGE_RATES_OUTPUT_PER_1K": "0.015"}
RATES = (Decimal("0.003"), Decimal("0.015"))


class ClaudeFake(FakeProvider):
    name = "anthropic"
    model = "claude-test"


def script(*usages: tuple[int, int]) -> list[ModelResponse]:
    items = [
        ModelResponse(
            tool_call=ToolCall(name="missing_tool", arguments={}),
            usage=TokenUsage(input_tokens=i, output_tokens=o),
        )
        for i, o in usages[:-1]
    ]
    last_in, last_out = usages[-1]
    usage = TokenUsage(input_tokens=last_in, output_tokens=last_out)
    items.append(ModelResponse(content="done", usage=usage))
    return items


async def run_with_ledger(db, provider, environ):
    manager = PluginManager(autoload=False, environ={})
    ledger = LedgerPlugin(db, environ=environ)
    manager.register(ledger, "ledger")
    store = SQLiteEventStore(db)
    try:
        runtime = AgentRuntime(provider=provider, event_store=store, plugins=manager)
        result = await runtime.run("count tokens")
        events = await store.get_events(result.run_id)
    finally:
        await store.close()
        ledger.close()
    return result, events, ledger


def expected_from_events(events):
    usage, cost = TokenUsage(), Decimal(0)
    for event in events:
        if event.event_type is EventType.MODEL_RESPONDED:
            step_usage = TokenUsage.model_validate(event.payload["usage"])
            usage = usage.plus(step_usage)
            cost += estimate_cost(step_usage, rates=RATES)
    return usage, cost


async def test_run_with_ledger_then_avo_cost_matches_events(tmp_path):
    db = tmp_path / "avo.db"
    first = FakeProvider(script((1000, 200), (1500, 100)))
    r1, ev1, led1 = await run_with_ledger(db, first, RATES_ENV)
    r2, ev2, _ = await run_with_ledger(db, ClaudeFake(script((700, 50))), RATES_ENV)
    assert r1.status.value == r2.status.value == "completed"
    assert [e.step for e in led1.recorded] == [1, 2]

    u1, c1 = expected_from_events(ev1)
    u2, c2 = expected_from_events(ev2)
    assert u1 == r1.token_usage and u2 == r2.token_usage

    # the real CLI, in a subprocess, against the same database
    avo = shutil.which("avo")
    cmd = [avo] if avo else [sys.executable, "-c", "from avo.cli import main; main()"]
    env = {**os.environ, "AVO_PLUGINS_ALLOW": "cost"}
    argv = [*cmd, "cost", "-d", str(db), "--json"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    runs = {run["run_id"]: run for run in report["runs"]}
    assert report["run_count"] == 2
    assert runs[r1.run_id]["usage"]["input_tokens"] == u1.input_tokens == 2500
    assert runs[r1.run_id]["usage"]["output_tokens"] == u1.output_tokens == 300
    assert Decimal(runs[r1.run_id]["cost_usd"]) == c1 == Decimal("0.012000")
    assert Decimal(runs[r2.run_id]["cost_usd"]) == c2 == Decimal("0.002850")
    assert runs[r1.run_id]["entries"] == 2 and runs[r2.run_id]["entries"] == 1
    models = {m["model"]: m for m in report["models"]}
    assert set(models) == {"fake", "claude-test"}
    assert models["fake"]["usage"]["total_tokens"] == u1.total_tokens
    assert Decimal(models["claude-test"]["cost_usd"]) == c2
    assert Decimal(report["cost_usd"]) == c1 + c2
    assert report["total"]["input_tokens"] == u1.input_tokens + u2.input_tokens

    text = subprocess.run(
        [*cmd, "cost", "-d", str(db)], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert r1.run_id in text and r2.run_id in text
    assert f"{c1 + c2:.6f}" in text and "claude-test" in text and "Per model:" in text


async def test_pricing_from_provider_plugin_when_env_sets_no_rates(tmp_path):
    from avo.plugins import provides

    manager = PluginManager(autoload=False, environ={})
    manager.register(
        provides(
            ProviderSpec(
                name="anthropic",
                factory=lambda settings, *, environ: ClaudeFake([]),
                pricing={"claude-test": (Decimal("1"), Decimal("2"))},
            )
        ),
        "anthropic",
        package="avo-providers",
    )
    pricing = pricing_from_plugins(manager, providers=["anthropic", "no-such-provider"])
    assert pricing == {"claude-test": (Decimal(1), Decimal(2))}
    db = tmp_path / "p.db"
    ledger = LedgerPlugin(db, pricing=pricing, environ={})
    manager.register(ledger, "ledger")
    store = SQLiteEventStore(db)
    provider = ClaudeFake(script((1000, 1000)))
    runtime = AgentRuntime(provider=provider, event_store=store, plugins=manager)
    await runtime.run("x")
    await store.close()
    assert ledger.recorded[0].cost_usd == Decimal("3.000000")
    # an unpriced model is recorded with unknown cost, not a made-up one
    store = SQLiteEventStore(db)
    provider = FakeProvider(script((5, 5)))
    runtime = AgentRuntime(provider=provider, event_store=store, plugins=manager)
    await runtime.run("y")
    await store.close()
    assert ledger.recorded[1].cost_usd is None
    ledger.close()
    report = aggregate_costs(db)
    assert report.cost_usd == Decimal("3.000000")
    assert {m.model: m.cost_usd for m in report.models} == {
        "claude-test": Decimal("3.000000"),
        "fake": None,
    }


def test_events_without_usage_or_of_other_types_write_no_row(tmp_path):
    from avo.events import AgentEvent
    from avo.models import utc_now

    db = tmp_path / "n.db"
    ledger = LedgerPlugin(db, environ={})
    for kind, payload in [
        (EventType.MODEL_RESPONDED, {"step": 1, "usage": None, "model": "m"}),
        (EventType.TOOL_STARTED, {"usage": {"input_tokens": 5, "output_tokens": 5}}),
    ]:
        ledger.avo_event_appended(
            AgentEvent(
                event_id="e", run_id="r", event_type=kind, created_at=utc_now(), payload=payload
            )
        )
    ledger.close()
    assert ledger.recorded == []
    with TokenLedger(db) as check:
        assert check.entries() == []


def test_cost_command_errors_and_empty_report(tmp_path, capsys):
    assert cost_main(["-d", str(tmp_path / "absent.db")], environ={}) == 2
    assert "no database at" in capsys.readouterr().err
    db = tmp_path / "empty.db"
    TokenLedger(db).close()
    assert cost_main([], environ={"AVO_DATABASE_PATH": str(db)}) == 0
    assert "No ledger entries yet." in capsys.readouterr().out
    with pytest.raises(StorageError):
        aggregate_costs(tmp_path / "nope.db")


def test_report_text_and_json_shapes(tmp_path):
    db = tmp_path / "r.db"
    with TokenLedger(db) as ledger:

        def usage(n: int) -> TokenUsage:
            return TokenUsage(input_tokens=n * 10, output_tokens=n)

        ledger.record("run-a", step=1, usage=usage(1), model="m1", cost_usd=Decimal("0.5"))
        ledger.record("run-a", step=2, usage=usage(2), model="m2")
        ledger.record("run-b", step=1, usage=usage(3), model="m1", cost_usd=Decimal("0.25"))
    report = aggregate_costs(db)
    assert report.run_count == 2 and report.total == TokenUsage(input_tokens=60, output_tokens=6)
    run_a = report.runs[0]
    assert [(m.model, m.usage.input_tokens, m.cost_usd) for m in run_a.by_model] == [
        ("m1", 10, Decimal("0.5")),
        ("m2", 20, None),
    ]
    m1 = next(m for m in report.models if m.model == "m1")
    assert m1.runs == 2 and m1.cost_usd == Decimal("0.75")
    data = json.loads(report.to_json())
    assert data["cost_usd"] == "0.75"
    assert data["runs"][0]["by_model"][1]["cost_usd"] is None
    text = report.to_text()
    assert "run-a" in text and "unknown" in text and "0.750000" in text
