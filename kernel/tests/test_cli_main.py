"""The avo console script: lazy command plugins, errors as ``avo: …`` + exit 2, avo run."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from avo.cli import main
from avo.testing.plugins import write_distribution

COMMAND_PLUGIN = """
import sys
from avo.plugins import CommandSpec, provides

def configure(parser):
    parser.add_argument("who")

def run(args):
    print(f"hello {{args.who}} (database {{getattr(args, 'database', None)}})")
    return 3

plugin = provides(CommandSpec(name={name!r}, configure=configure, run=run, help="say hello"))
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def _command_dist(site: Path, command: str, source: str | None = None) -> str:
    module = f"cmd_{uuid.uuid4().hex[:10]}"
    write_distribution(
        site,
        f"avo-{command}-cmd",
        entry_points={"avo.commands": {command: f"{module}:plugin"}},
        modules={module: source or COMMAND_PLUGIN.format(name=command)},
    )
    return module


def test_version_imports_no_plugin() -> None:
    probe = (
        "import sys\n"
        "from avo.cli import main\n"
        "code = main(['--version'])\n"
        "loaded = [m for m in sys.modules if m.startswith(('avo', 'pydantic', 'pluggy'))]\n"
        "print(code, sorted(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    version_line, modules_line = out.strip().splitlines()
    assert version_line == "avo 1.0.0"
    code, loaded = modules_line.split(" ", 1)
    assert code == "0"
    assert "avo._builtins" not in loaded and "pydantic" not in loaded and "pluggy" not in loaded


def test_third_party_command_is_loaded_only_when_invoked(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _command_dist(site, "hello")
    other = _command_dist(site, "unused")
    assert main(["-d", "x.db", "hello", "world"], environ={}) == 3
    assert capsys.readouterr().out.strip() == "hello world (database x.db)"
    assert module in sys.modules and other not in sys.modules


def test_broken_command_reports_and_exits_2(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _command_dist(site, "crash", source="raise RuntimeError('no config')\n")
    assert main(["crash"], environ={}) == 2
    err = capsys.readouterr().err
    assert err.startswith("avo: command plugin 'crash' from avo-crash-cmd 1.0.0")
    assert "RuntimeError: no config" in err
    # every other command keeps working
    assert main(["plugin", "list", "--json"], environ={}) == 0
    rows = json.loads(capsys.readouterr().out)
    statuses = {row["name"]: row["status"] for row in rows}
    assert statuses["crash"] == "broken" and statuses["fake"] == "ok"


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["definitely-not-a-command"], environ={}) == 2
    assert "definitely-not-a-command" in capsys.readouterr().err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([], environ={}) == 2
    out = capsys.readouterr().out
    assert "plugin" in out and "run" in out


def test_autoload_off_keeps_avo_plugin_working(capsys: pytest.CaptureFixture[str]) -> None:
    env = {"AVO_PLUGINS_AUTOLOAD": "0"}
    assert main(["plugin", "list", "--json"], environ=env) == 0
    rows = {(row["kind"], row["name"]): row for row in json.loads(capsys.readouterr().out)}
    assert rows["command", "plugin"]["status"] == "ok"
    assert rows["provider", "fake"]["status"] == "disabled"
    assert main(["run", "hi"], environ=env) == 2
    assert "autoloading is disabled" in capsys.readouterr().err


def test_avo_run_streams_and_summarises(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "avo.toml"
    config.write_text(
        '[provider]\nname = "fake"\n[[provider.settings.script]]\ncontent = "the answer"\n'
        "usage = {input_tokens = 7, output_tokens = 3}\n"
        '[store]\nlocation = "memory:"\n',
        encoding="utf-8",
    )
    assert main(["run", "question?", "--config", str(config)], environ={}) == 0
    captured = capsys.readouterr()
    # the answer alone on stdout; the run id (first) and the summary on stderr
    assert captured.out == "the answer\n"
    err = captured.err
    assert err.startswith("avo: run ") and " started (store memory:)" in err.splitlines()[0]
    assert "stop reason: completed" in err and "steps:       1" in err
    assert "tokens:      10 (input 7, output 3)" in err
    assert "run id:" in err


def test_avo_run_config_error_is_avo_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "x", "--config", str(tmp_path / "missing.toml")], environ={}) == 2
    assert capsys.readouterr().err.startswith("avo: config file ")
    bad = tmp_path / "bad.toml"
    bad.write_text('[provider]\nname = "fake"\n', encoding="utf-8")
    code = main(["run", "x", "-c", str(bad), "-d", "memory:", "--tool", "nope"], environ={})
    assert code == 2
    assert "--tool: unknown tool 'nope'" in capsys.readouterr().err


def test_avo_run_stopped_run_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "avo.toml"
    config.write_text(
        '[provider]\nname = "fake"\n[provider.settings]\nrepeat_last = true\n'
        '[[provider.settings.script]]\ntool_call = {name = "missing_tool"}\n'
        '[store]\nlocation = "memory:"\n[policy]\nmax_steps = 2\n',
        encoding="utf-8",
    )
    assert main(["run", "loop", "-c", str(config)], environ={}) == 1
    err = capsys.readouterr().err
    assert "status:      " in err and "status:      completed" not in err
    assert "\nerror:       " in err  # why it stopped, in full


def test_config_plugin_switches_apply_to_avo_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "avo.toml"
    config.write_text(
        '[plugins]\nblock = ["fake"]\n[provider]\nname = "fake"\n[store]\nlocation = "memory:"\n',
        encoding="utf-8",
    )
    assert main(["run", "x", "-c", str(config)], environ={}) == 2
    assert "is disabled: blocked" in capsys.readouterr().err
