"""``avo plugin show|remove|init``; pip install/remove: tests/test_third_party_plugin.py."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from avo.cli import main
from avo.cli._scaffold import GROUPS


def test_show_json_has_entry_point_hooks_and_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugin", "show", "fake", "--json"], environ={}) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kind"] == "provider" and info["package"] == "avo-kernel"
    assert info["entry_point"] == "avo.providers: fake = avo._builtins:fake_provider"
    assert info["hooks"] == ["avo_register_providers"]
    assert "script" in info["settings_schema"]["properties"]
    assert info["docs"].startswith("Scripted responses")


def test_show_text_and_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugin", "show", "memory", "--kind", "store"], environ={}) == 0
    out = capsys.readouterr().out
    assert out.startswith("memory (store)  avo-kernel 1.0.0")
    assert "schemes:" in out and "settings:    (none)" in out
    assert main(["plugin", "show", "no-such-plugin"], environ={}) == 2
    assert capsys.readouterr().err.startswith("avo: no plugin named 'no-such-plugin'; installed:")


def test_remove_refuses_the_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugin", "remove", "avo-kernel", "--yes"], environ={}) == 2
    assert "refusing to remove avo-kernel" in capsys.readouterr().err
    assert main(["plugin", "remove", "fake", "--yes"], environ={}) == 2  # shipped by the kernel


def test_remove_asks_and_aborts_on_no(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    assert main(["plugin", "remove", "pluggy"], environ={}) == 1
    out = capsys.readouterr().out
    assert "Remove pluggy? [y/N]: " in out and "aborted; nothing removed" in out


def test_remove_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugin", "remove", "surely-not-installed-xyz", "--yes"], environ={}) == 2
    assert "no installed plugin or package named" in capsys.readouterr().err


def test_init_scaffolds_packages_whose_tests_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = []
    tests = []
    for kind in GROUPS:
        target = tmp_path / kind
        assert (
            main(["plugin", "init", f"demo-{kind}", "--kind", kind, "--directory", str(target)])
            == 0
        )
        module = f"avo_demo_{kind}"
        assert (target / "src" / module / "plugin.py").is_file()
        assert (target / "README.md").is_file()
        pyproject = (target / "pyproject.toml").read_text()
        assert f'[project.entry-points."{GROUPS[kind]}"]' in pyproject
        assert f'demo-{kind} = "{module}.plugin:plugin"' in pyproject
        assert 'version = "0.1.0"' in pyproject and '"avo-kernel>=1.0,<2"' in pyproject
        sources.append(str(target / "src"))
        tests.append(str(target / "tests"))
    assert "created" in capsys.readouterr().out
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sources)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "asyncio_mode=auto",
            "--import-mode=importlib",
            "--rootdir",
            str(tmp_path),
            *tests,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout


def test_init_refuses_bad_names_and_existing_dirs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plugin", "init", "Bad Name", "--kind", "tool"]) == 2
    assert "invalid plugin name 'Bad Name'" in capsys.readouterr().err
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep").write_text("")
    args = ["plugin", "init", "ok", "--kind", "tool", "--directory", str(tmp_path / "x")]
    assert main(args) == 2
    assert "already exists" in capsys.readouterr().err


def test_install_failure_is_an_avo_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # real pip, never the network
    missing = str(tmp_path / "avo_missing-1.0.0-py3-none-any.whl")
    assert main(["plugin", "install", missing], environ={}) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"avo: pip install {missing} failed with exit code")
