"""A bare ``avo`` on a terminal runs the command that asks for it (``interactive_default``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from avo.cli import _app, main
from avo.testing.plugins import write_distribution

SOURCE = """
from avo.plugins import CommandSpec, provides

def configure(parser):
    parser.add_argument("--who", default="nobody")

def run(args):
    print(f"{name} started for {{args.who}} (database {{args.database}})")
    return 0

plugin = provides(
    CommandSpec(name={name!r}, configure=configure, run=run, help="h", interactive_default=True)
)
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def _install(site: Path, name: str) -> None:
    module = f"cmd_{uuid.uuid4().hex[:10]}"
    write_distribution(
        site,
        f"avo-{name}-cmd",
        entry_points={"avo.commands": {name: f"{module}:plugin"}},
        modules={module: SOURCE.format(name=name)},
    )


def test_bare_avo_on_a_terminal_runs_the_interactive_default(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _install(site, "greet")
    monkeypatch.setattr(_app, "_on_a_terminal", lambda: True)
    env = {"AVO_PLUGINS_ALLOW": "greet"}
    assert main(["-d", "x.db"], environ=env) == 0
    assert capsys.readouterr().out == "greet started for nobody (database x.db)\n"


def test_bare_avo_off_a_terminal_prints_the_help(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _install(site, "greet")
    monkeypatch.setattr(_app, "_on_a_terminal", lambda: False)
    assert main([], environ={"AVO_PLUGINS_ALLOW": "greet"}) == 2
    assert "commands" in capsys.readouterr().out


def test_two_commands_asking_for_bare_avo_are_named(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _install(site, "greet")
    _install(site, "wave")
    monkeypatch.setattr(_app, "_on_a_terminal", lambda: True)
    assert main([], environ={"AVO_PLUGINS_ALLOW": "greet,wave"}) == 2
    captured = capsys.readouterr()
    assert (
        "avo: several commands start on a bare avo (greet (avo-greet-cmd), wave (avo-wave-cmd)); "
        "run one of them by name" in captured.err
    )
    assert "commands" in captured.out
