"""Trials that hang or kill their process, models compared with --provider/--model,
inline configs, YAML suites, concurrency and kept workspaces: the real CLI and real plugins.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from avo.testing.plugins import write_distribution

pytest.importorskip("avo_sqlite")

KIT = """
import asyncio
import os
from decimal import Decimal

from pydantic import BaseModel, ConfigDict

from avo.models import ModelResponse, ToolRisk, TokenUsage
from avo.plugins import ProviderSpec, ToolSpec, provides


class EchoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = "small"


class EchoModel:
    name = "echo_model"

    def __init__(self, model):
        self.model = model

    async def generate(self, request):
        return ModelResponse(
            content=f"model={self.model}",
            usage=TokenUsage(input_tokens=1000, output_tokens=500),
        )


def _echo(settings, *, environ=None):
    return EchoModel(EchoSettings.model_validate(dict(settings)).model)


echo_model = provides(
    ProviderSpec(
        name="echo_model",
        factory=_echo,
        settings_model=EchoSettings,
        models=("small", "big"),
        pricing={
            "small": (Decimal("0.001"), Decimal("0.002")),
            "big": (Decimal("0.01"), Decimal("0.02")),
        },
    )
)


class NoArgs(BaseModel):
    pass


def _tool(name, function):
    def make(settings):
        from avo.tools import FunctionTool

        return FunctionTool(
            name=name, description=name, arguments_model=NoArgs, function=function,
            risk=ToolRisk.INSPECT, run_in_thread=False,
        )

    return provides(ToolSpec(name=name, factory=make, risk=ToolRisk.INSPECT))


async def _sleep(args):
    await asyncio.sleep(60)


def _exit(args):
    os._exit(7)


sleepy = _tool("sleepy", _sleep)
exits = _tool("exits", _exit)
"""


def _row(text: str, name: str, after: str = "") -> list[str]:
    """The cells of the table row starting with ``name`` (after the line containing ``after``)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    line = next(line for line in lines[start:] if line.startswith(name + " "))
    return re.split(r"\s{2,}", line.strip())


@pytest.fixture
def kit_env(tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "kit"
    write_distribution(
        root,
        "avo-evals-testkit",
        entry_points={
            "avo.providers": {"echo_model": "avo_evals_testkit:echo_model"},
            "avo.tools": {"sleepy": "avo_evals_testkit:sleepy", "exits": "avo_evals_testkit:exits"},
        },
        modules={"avo_evals_testkit": KIT},
    )
    return {"PYTHONPATH": str(root)}


def _script_case(name: str, tool: str | None, checks: str, extra: str = "") -> str:
    script = f'{{tool_call = {{name = "{tool}", arguments = {{}}}}}}, ' if tool else ""
    return (
        f'[[cases]]\nname = "{name}"\ntask = "t"\nchecks = [{checks}]\n{extra}'
        f"[cases.config]\ntools = [{f'{tool!r}' if tool else ''}]\n"
        f'[cases.config.provider]\nname = "fake"\n'
        f'settings = {{script = [{script}{{content = "finished"}}]}}\n'
    ).replace("'", '"')


def test_hung_and_dying_trials_fail_with_why_and_later_trials_still_run(
    avo: Any, kit_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "suite.toml").write_text(
        "concurrency = 1\ntimeout_seconds = 20\n"
        + _script_case(
            "hangs", "sleepy", '{answer_contains = "finished"}', "timeout_seconds = 1.5\n"
        )
        + _script_case("dies", "exits", '{answer_contains = "finished"}')
        + _script_case("fine", None, '{answer_contains = "finished"}')
    )
    done = avo("eval", "suite.toml", "--no-progress", env=kit_env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "trial 1: trial: the trial did not run: timed out after 1.5s (raise timeout_seconds" in (
        done.stdout
    )
    assert "trial 1: trial: the trial did not run: the trial process exited with code 7" in (
        done.stdout
    )
    assert _row(done.stdout, "fine")[:2] == ["fine", "1/1"]
    assert _row(done.stdout, "hangs !")[:2] == ["hangs !", "0/1"]
    data = json.loads((tmp_path / "eval-results.json").read_text())
    by_name = {case["name"]: case for case in data["cases"]}
    assert by_name["fine"]["passed"] is True
    assert by_name["hangs"]["results"][0]["crash"].startswith("timed out after 1.5s")


def test_provider_and_model_overrides_compare_models_on_one_suite(
    avo: Any, kit_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "suite.toml").write_text(
        "trials = 2\n"
        + _script_case(
            "small-and-cheap",
            None,
            '{answer_contains = "model=small"}, {max_cost_usd = 0.005}',
        )
    )
    small = avo("eval", "suite.toml", "--provider", "echo_model", "-o", "small.json", env=kit_env)
    assert small.returncode == 0, small.stdout + small.stderr
    data = json.loads((tmp_path / "small.json").read_text())
    assert data["provider"] == "echo_model"
    assert (
        data["cases"][0]["cost_usd"] == "0.004000"
    )  # 2 trials x (1k in x 0.001 + 0.5k out x 0.002)

    big = avo(
        "eval", "suite.toml", "--provider", "echo_model", "--model", "big",
        "--baseline", "small.json", "-o", "big.json", env=kit_env,
    )  # fmt: skip
    assert big.returncode == 1
    assert "the answer lacks 'model=small': 'model=big'" in big.stdout
    assert "cost $0.020000 is over $0.005" in big.stdout
    row = _row(big.stdout, "small-and-cheap", after="compared with baseline")
    assert row == ["small-and-cheap", "2/2 100%", "0/2 0%", "regressed", "1.00x", row[5], "10.00x"]
    assert "regressed small-and-cheap: first divergent run is trial 1" in big.stdout
    assert "output" in big.stdout and "model=small" in big.stdout and "model=big" in big.stdout

    wrong = avo("eval", "suite.toml", "--model", "big", env=kit_env)
    assert wrong.returncode == 2
    assert "provider.settings: unknown key 'model.model'" not in wrong.stderr
    assert (
        "unknown key 'provider.settings.model'; provider.settings accepts: chunk_chars, "
        "chunk_delay_ms, repeat_last, script" in (wrong.stderr)
    )


def test_yaml_suite_with_fixture_files_and_kept_workspaces(avo: Any, tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    pytest.importorskip("avo_tools")
    (tmp_path / "suite.yaml").write_text(
        """
name: yaml-suite
trials: 2
concurrency: 2
config:
  tools: [{name: read_file, settings: {workspace: "."}}]
  provider:
    name: fake
    settings:
      script:
        - tool_call: {name: read_file, arguments: {path: data/n.txt}}
        - content: "forty-two"
cases:
  - name: reads-fixture
    task: read data/n.txt
    fixtures: {"data/n.txt": "42"}
    checks:
      - tool_called: read_file
        arguments: {path: data/n.txt}
        outcome: ok
      - answer_contains: forty
      - file: data/n.txt
        equals: "42"
"""
    )
    done = avo("eval", "suite.yaml", "--keep-workspaces", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["suite"] == "yaml-suite" and data["passed"] is True
    assert data["cases"][0]["passes"] == 2
    kept = [line for line in done.stderr.splitlines() if "workspaces kept in" in line]
    root = Path(kept[0].split("workspaces kept in ")[1])
    try:
        workspaces = sorted(root.glob("*/trial-*/workspace"))
        assert len(workspaces) == 2
        assert all((w / "data" / "n.txt").read_text() == "42" for w in workspaces)
        assert (workspaces[0].parent / "trial.log").exists()
    finally:
        import shutil

        shutil.rmtree(root)


def test_a_call_that_needs_approval_is_denied_with_the_fix_in_the_reason(
    avo: Any, tmp_path: Path
) -> None:
    pytest.importorskip("avo_tools")
    pytest.importorskip("avo_permissions")
    (tmp_path / "suite.toml").write_text(
        """
[[cases]]
name = "writes"
task = "write it"
checks = [{ tool_called = "write_file", outcome = "ok" }, { file = "out.txt" }]
[cases.config]
tools = [{ name = "write_file", settings = { workspace = "." } }]
[cases.config.provider]
name = "fake"
settings = { script = [
    { tool_call = { name = "write_file", arguments = { path = "out.txt", content = "x" } } },
    { content = "done" },
] }
"""
    )
    done = avo("eval", "suite.toml", "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "write_file was called but denied: " in done.stdout
    assert "trials are unattended, so a call that needs approval is denied unless the case's " in (
        done.stdout
    )
    assert "out.txt does not exist in the workspace (the workspace is empty)" in done.stdout


def test_ctrl_c_stops_the_eval_and_its_workers(
    avo: Any, kit_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "suite.toml").write_text(
        "trials = 4\nconcurrency = 2\n"
        + _script_case("hangs", "sleepy", '{answer_contains = "finished"}')
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "avo.cli", "eval", "suite.toml"],
        cwd=tmp_path,
        env={**avo.env, **kit_env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, like a job on a terminal
    )
    runs = tmp_path / "avo.db"
    deadline = time.monotonic() + 60
    while not runs.exists() and time.monotonic() < deadline:  # trials have started
        time.sleep(0.2)
    time.sleep(2)
    children = subprocess.run(
        ["pgrep", "-P", str(process.pid)], capture_output=True, text=True
    ).stdout.split()
    assert len(children) == 2  # the two workers, each in its own session
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends the foreground group
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, out + err
    assert "avo: interrupted" in err.decode()
    assert not (tmp_path / "eval-results.json").exists()
    time.sleep(0.5)
    assert [pid for pid in children if Path(f"/proc/{pid}").exists()] == []  # none outlives it


def test_shell_provider_variables_do_not_override_a_case(avo: Any, tmp_path: Path) -> None:
    (tmp_path / "suite.toml").write_text(
        _script_case("scripted", None, '{answer_contains = "finished"}')
    )
    # a shell set up for a real model: the scripted case still runs on its fake provider
    shell = {"AVO_PROVIDER": "anthropic", "AVO_MODEL": "some-model"}
    done = avo("eval", "suite.toml", "--no-progress", env=shell)
    assert done.returncode == 0, done.stdout + done.stderr
    # a case naming no provider takes them (and says which is missing when it cannot)
    (tmp_path / "bare.toml").write_text(
        '[[cases]]\nname = "bare"\ntask = "t"\nchecks = [{answer_contains = "x"}]\n[cases.config]\n'
    )
    done = avo("eval", "bare.toml", "--no-progress", env={"AVO_PROVIDER": "fake", "AVO_MODEL": "m"})
    assert done.returncode == 2
    assert "config: unknown key 'provider.settings.model'; provider.settings accepts: " in (
        done.stderr
    )
