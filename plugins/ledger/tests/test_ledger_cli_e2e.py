"""`avo run` with the ledger enabled in avo.toml, then `avo cost`: real CLI, real SQLite."""

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal

from avo.events import EventType
from avo.models import TokenUsage
from avo.usage import estimate_cost
from avo_sqlite import SQLiteEventStore

CONFIG = """
hooks = [{name = "ledger"}]

[permission]
mode = "bypass_permissions"   # the scripted call names no real tool: nothing to approve

[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {name = "lookup", arguments = {q = "x"}}
usage = {input_tokens = 1200, output_tokens = 80}

[[provider.settings.script]]
content = "the answer"
usage = {input_tokens = 1500, output_tokens = 40}
"""


def avo(*args: str, env: dict[str, str], cwd) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("avo")
    cmd = [exe] if exe else [sys.executable, "-m", "avo.cli"]
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )


async def test_avo_run_with_ledger_then_avo_cost(tmp_path):
    (tmp_path / "avo.toml").write_text(CONFIG)
    db = tmp_path / "runs.db"
    env = {
        **os.environ,
        "AVO_DATABASE_PATH": str(db),
        "AVO_USAGE_RATES_INPUT_PER_1K": "0.25",
        "AVO_USAGE_RATES_OUTPUT_PER_1K": "1.25",
    }
    first = avo("run", "--json", "find it", env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    second = avo("run", "--json", "find it again", env=env, cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    run_ids = [json.loads(proc.stdout)["run_id"] for proc in (first, second)]
    assert len(set(run_ids)) == 2

    expected: dict[str, tuple[TokenUsage, Decimal]] = {}
    async with SQLiteEventStore(db) as store:
        for run_id in run_ids:
            usage, cost = TokenUsage(), Decimal(0)
            for event in await store.get_events(run_id):
                if event.event_type is EventType.MODEL_RESPONDED:
                    step = TokenUsage.model_validate(event.payload["usage"])
                    usage = usage.plus(step)
                    cost += estimate_cost(step, rates=(Decimal("0.25"), Decimal("1.25")))
            expected[run_id] = (usage, cost)

    report_proc = avo("cost", "--json", env=env, cwd=tmp_path)
    assert report_proc.returncode == 0, report_proc.stderr
    report = json.loads(report_proc.stdout)
    assert report["database"] == str(db)
    runs = {run["run_id"]: run for run in report["runs"]}
    assert set(runs) == set(run_ids)
    for run_id, (usage, cost) in expected.items():
        assert usage == TokenUsage(input_tokens=2700, output_tokens=120)
        assert runs[run_id]["usage"]["input_tokens"] == usage.input_tokens
        assert runs[run_id]["usage"]["output_tokens"] == usage.output_tokens
        assert Decimal(runs[run_id]["cost_usd"]) == cost == Decimal("0.825000")
        assert runs[run_id]["entries"] == 2
    (model,) = report["models"]
    assert model["model"] == "fake" and model["runs"] == 2
    assert Decimal(model["cost_usd"]) == Decimal("1.650000") == Decimal(report["cost_usd"])
