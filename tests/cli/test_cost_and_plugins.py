"""``avo cost`` prices what it can and says when a total is partial; plugin authors' paths work."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from collections.abc import Iterator
from decimal import Decimal
from importlib import metadata
from pathlib import Path

import pytest
from cli_kit import CLI, FAKE_ANSWER, write

from avo.models import TokenUsage
from avo.testing.plugins import write_distribution
from avo.testing.providers import ScriptedHTTPServer

LEDGER = 'hooks = ["ledger"]\n'


@pytest.fixture
def server() -> Iterator[ScriptedHTTPServer]:
    with ScriptedHTTPServer() as running:
        yield running


def test_an_openai_run_is_priced_from_the_plugin_catalog(
    cli: CLI, server: ScriptedHTTPServer
) -> None:
    pytest.importorskip("avo_providers")
    from avo_providers.wire_fakes import OpenAIWire

    server.push(OpenAIWire().text_stream("hi", TokenUsage(input_tokens=1000, output_tokens=500)))
    write(
        cli.cwd / "avo.toml",
        LEDGER + '[provider]\nname = "openai"\n[provider.settings]\nmodel = "gpt-4o-mini"\n',
    )
    env = {"AVO_OPENAI_BASE_URL": server.url + "/v1", "AVO_OPENAI_API_KEY": "sk-test-0123456789"}
    assert cli("run", "hello", **env).code == 0
    report = json.loads(cli("cost", "--json").out)
    # gpt-4o-mini: 0.15 USD / 1M input, 0.60 USD / 1M output
    assert Decimal(report["cost_usd"]) == Decimal("0.000450")
    assert report["cost_partial"] is False
    text = cli("cost").out
    assert "Cost: 0.000450 USD" in text and "unknown" not in text


def test_budget_rates_price_runs_the_catalog_does_not_know(cli: CLI) -> None:
    write(
        cli.cwd / "avo.toml",
        LEDGER + FAKE_ANSWER + '\n[budget]\ninput_per_1k = "0.5"\noutput_per_1k = "1.0"\n',
    )
    assert cli("run", "hello").code == 0
    report = json.loads(cli("cost", "--json").out)
    # the fake answer used 5 input and 2 output tokens
    assert Decimal(report["cost_usd"]) == Decimal("0.004500")


def test_a_total_over_priced_and_unpriced_runs_says_it_is_partial(cli: CLI) -> None:
    write(cli.cwd / "priced.toml", LEDGER + FAKE_ANSWER)
    write(cli.cwd / "unpriced.toml", LEDGER + FAKE_ANSWER)
    rates = {"AVO_USAGE_RATES_INPUT_PER_1K": "1", "AVO_USAGE_RATES_OUTPUT_PER_1K": "1"}
    priced = json.loads(cli("run", "one", "-c", "priced.toml", "--json", **rates).out)["run_id"]
    unpriced = json.loads(cli("run", "two", "-c", "unpriced.toml", "--json").out)["run_id"]
    report = json.loads(cli("cost", "--json").out)
    assert report["cost_partial"] is True and report["unpriced_runs"] == [unpriced]
    assert Decimal(report["cost_usd"]) == Decimal("0.007000")
    text = cli("cost").out.splitlines()
    assert text[1].endswith(
        "Cost: 0.007000 USD, partial: 1 of 2 runs include calls with no known price"
    )
    assert any(line.startswith(priced) for line in text)
    assert text[-1].startswith(
        "No price is known for some calls (a cost marked * leaves them out): "
        'give each model its prices in avo.toml ([pricing."fake"] input = ...'
    )


def test_unpriced_calls_get_a_hint_that_prices_them(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", LEDGER + FAKE_ANSWER)
    assert cli("run", "hello").code == 0
    text = cli("cost").out.splitlines()
    assert text[1].endswith("Cost: unknown (no price is known for any model call)")
    assert text[-1].startswith("No price is known for these calls: give each model its prices")
    # doing what it says prices them: 5 input and 2 output tokens at 1 and 2 USD / 1M
    write(
        cli.cwd / "avo.toml",
        LEDGER + FAKE_ANSWER + '\n[pricing."fake"]\ninput = 1\noutput = 2\n',
    )
    report = json.loads(cli("cost", "--json").out)
    assert Decimal(report["cost_usd"]) == Decimal("0.000009"), report


TOOL_WITH_ENV = """
from pydantic import BaseModel, ConfigDict
from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


def make(settings, *, environ):
    from avo.tools import FunctionTool

    greeting = environ.get("GREETING", "(none)")
    return FunctionTool(name="greet", description="Say the configured greeting.",
                        arguments_model=Args, function=lambda a: greeting, risk=ToolRisk.INSPECT)


plugin = provides(ToolSpec(name="greet", factory=make, risk=ToolRisk.INSPECT))
"""


def test_tool_factories_get_the_environment(cli: CLI, tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_distribution(
        site,
        "avo-greet",
        entry_points={"avo.tools": {"greet": "greet_tool:plugin"}},
        modules={"greet_tool": TOOL_WITH_ENV},
    )
    write(
        cli.cwd / "avo.toml",
        'tools = ["greet"]\n[provider]\nname = "fake"\n'
        '[[provider.settings.script]]\ntool_call = {name = "greet"}\n'
        '[[provider.settings.script]]\ncontent = "greeted"\n',
    )
    env = {"PYTHONPATH": str(site), "GREETING": "hello from the environment"}
    done = json.loads(cli("run", "greet", "--json", **env).out)
    trace = json.loads(cli("runs", "inspect", done["run_id"], "--json", **env).out)
    outputs = [e["payload"] for e in trace["events"] if e["event_type"] == "tool_completed"]
    assert outputs[0]["result"]["output"] == "hello from the environment"


def _offline_venv(root: Path) -> Path:
    """A fresh venv seeing this environment's third-party packages (not avo's)."""
    staged = root / "site"
    staged.mkdir(parents=True)
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("avo") or name in ("pip", "setuptools") or not dist.files:
            continue
        base = Path(str(dist.locate_file("")))
        for top in {Path(str(f)).parts[0] for f in dist.files if ".." not in Path(str(f)).parts}:
            if (base / top).exists() and not (staged / top).exists():
                (staged / top).symlink_to(base / top)
    venv.EnvBuilder(with_pip=True, symlinks=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "_third_party.pth").write_text(f"{staged}\n", encoding="utf-8")
    return python


@pytest.mark.slow
def test_the_scaffolded_tool_passes_its_own_next_step(cli: CLI, tmp_path: Path) -> None:
    created = cli("plugin", "init", "shout", "--kind", "tool")
    assert created.code == 0, created.err
    next_step = created.out.splitlines()[1]
    target = cli.cwd / "avo-shout"
    assert next_step == (
        f"next: pip install -e '{target}[test]' && python -m pytest {target / 'tests'}"
    )
    python = _offline_venv(tmp_path / "author")
    kernel = Path(__file__).resolve().parents[2] / "kernel"
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    bindir = str(python.parent)
    env["PATH"] = bindir + os.pathsep + env["PATH"]
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-build-isolation", str(kernel)],
        check=True,
        capture_output=True,
        env=env,
    )
    command = next_step.removeprefix("next: ").replace(
        "pip install", "pip install -q --no-build-isolation"
    )
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, cwd=cli.cwd, env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
