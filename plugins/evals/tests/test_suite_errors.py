"""Bad suite files: one line naming the file, the key and the fix; nothing runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from avo_evals import SuiteError, load_suite
from avo_evals.checks import resolve_python_checks

CONFIG = '[provider]\nname = "fake"\n'


def _suite(tmp_path: Path, body: str, name: str = "suite.toml") -> Path:
    (tmp_path / "avo.toml").write_text(CONFIG)
    path = tmp_path / name
    path.write_text(body)
    return path


CASE = '[[cases]]\nname = "one"\ntask = "do it"\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'config = "avo.toml"\ntrails = 3\n' + CASE + 'checks = [{answer_contains = "x"}]\n',
            "unknown key trails; suite keys: name, description, config",
        ),
        (
            'config = "avo.toml"\n' + CASE + 'checks = [{answer_contain = "x"}]\n',
            "unknown key cases[0].checks[0].answer_contain (case 'one'); check keys: label, "
            "answer_contains",
        ),
        (
            'config = "avo.toml"\n' + CASE + 'checks = [{answer_contains = "x", max_steps = 3}]\n',
            "cases[0].checks[0] (case 'one'): a check needs exactly one of answer_contains",
        ),
        (
            'config = "avo.toml"\n' + CASE + 'checks = [{answer_matches = "(unclosed"}]\n',
            "cases[0].checks[0] (case 'one'): '(unclosed' is not a valid regular expression",
        ),
        (
            'config = "avo.toml"\n' + CASE + 'checks = [{stop_reason = "done"}]\n',
            "stop_reason 'done' is not one of: completed, max_steps",
        ),
        (
            'config = "avo.toml"\n' + CASE + 'checks = [{file = "../etc/passwd"}]\n',
            "file path '../etc/passwd' must be relative to the workspace, without '..'",
        ),
        (
            'config = "avo.toml"\n' + CASE + 'checks = [{answer_contains = "x", times = 2}]\n',
            "times does not apply to answer_contains (it takes: ignore_case)",
        ),
        (
            'config = "avo.toml"\n[[cases]]\nname = "one"\nchecks = [{answer_contains = "x"}]\n',
            "cases[0].task (case 'one') is required; add it",
        ),
        (
            'config = "avo.toml"\n' + CASE + "checks = []\n",
            "cases[0].checks (case 'one'): List should have at least 1 item",
        ),
        (
            'config = "missing.toml"\n' + CASE + 'checks = [{answer_contains = "x"}]\n',
            "config: no avo config at",
        ),
        (
            'config = "avo.toml"\n'
            + CASE
            + 'fixtures = "nope"\nchecks = [{answer_contains = "x"}]\n',
            "cases[0].fixtures: no fixture directory at",
        ),
        (
            'config = "avo.toml"\n'
            + CASE
            + 'checks = [{answer_contains = "x"}]\n'
            + CASE
            + 'checks = [{answer_contains = "y"}]\n',
            "two cases are named 'one'; give each a unique name",
        ),
        ('config = "avo.toml"\ncases = [\n', "not valid TOML"),
    ],
)
def test_bad_suite_is_one_line_naming_file_key_and_fix(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = _suite(tmp_path, body)
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path)), message
    assert expected in message, message


def test_missing_and_unknown_suite_files(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"does not exist; pass the path of a .toml or .yaml"):
        load_suite(tmp_path / "nope.toml")
    (tmp_path / "suite.json").write_text("{}")
    with pytest.raises(SuiteError, match=r"unknown suite format '.json'; name the file .toml"):
        load_suite(tmp_path / "suite.json")


def test_yaml_suite_reads_like_toml_and_reports_yaml_errors(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = _suite(
        tmp_path,
        "config: avo.toml\ntrials: 2\ncases:\n  - name: one\n    task: do it\n"
        "    checks:\n      - answer_contains: [a, b]\n      - tool_called: grep\n"
        "        arguments: {pattern: x}\n",
        "suite.yaml",
    )
    suite = load_suite(path)
    assert suite.trials == 2 and suite.label == "suite"
    assert [check.kind for check in suite.cases[0].checks] == ["answer_contains", "tool_called"]
    bad = _suite(tmp_path, "cases: [\n", "bad.yml")
    with pytest.raises(SuiteError, match=r"bad.yml: not valid YAML \(line 2\)"):
        load_suite(bad)
    listed = _suite(tmp_path, "- a\n- b\n", "list.yaml")
    with pytest.raises(SuiteError, match=r"a suite is a table of keys .* not a list"):
        load_suite(listed)


def test_a_custom_check_that_cannot_load_fails_before_any_trial(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        'config = "avo.toml"\n' + CASE + 'checks = [{python = "no_such_module_xyz.check"}]\n',
    )
    suite = load_suite(path)
    with pytest.raises(SuiteError) as info:
        resolve_python_checks(suite)
    message = str(info.value)
    assert "cases[0].checks[0].python: cannot load 'no_such_module_xyz.check'" in message
    assert "put the module beside the suite file or on PYTHONPATH" in message
    not_dotted = _suite(tmp_path, 'config = "avo.toml"\n' + CASE + 'checks = [{python = "x"}]\n')
    with pytest.raises(SuiteError, match=r"is not a dotted path; write 'module\.function'"):
        load_suite(not_dotted)


def test_unknown_plugin_or_missing_provider_fails_before_any_trial(
    avo: Any, tmp_path: Path
) -> None:
    (tmp_path / "avo.toml").write_text('tools = ["no_such_tool"]\n' + CONFIG)
    (tmp_path / "suite.toml").write_text(
        'config = "avo.toml"\n' + CASE + 'checks = [{answer_contains = "x"}]\n'
    )
    done = avo("eval", "suite.toml", "--no-progress")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "\n" not in line
    assert "suite.toml: case 'one' (cases[0]) config: tools[0]: no tool plugin named " in line
    assert "'no_such_tool'; installed: " in line and "(install the plugin or fix the name)" in line
    assert not (tmp_path / "eval-results.json").exists()

    (tmp_path / "avo.toml").write_text("[policy]\nmax_steps = 3\n")
    done = avo("eval", "suite.toml", "--no-progress")
    assert done.returncode == 2
    assert "config: no provider: add [provider] name to the case's config or pass --provider" in (
        done.stderr
    )
    (tmp_path / "avo.toml").write_text('[provider]\nname = "fake"\n[policy]\nmax_stepz = 3\n')
    done = avo("eval", "suite.toml", "--no-progress")
    assert done.returncode == 2
    assert "config: unknown key 'policy.max_stepz'; policy accepts: " in done.stderr


def test_bad_flags_and_baseline(avo: Any, example_suite: Path, tmp_path: Path) -> None:
    done = avo("eval", str(example_suite), "--baseline", "nope.json")
    assert done.returncode == 2
    assert "baseline nope.json does not exist; pass the results JSON" in done.stderr
    (tmp_path / "other.json").write_text('{"format": "something-else"}')
    done = avo("eval", str(example_suite), "--baseline", "other.json")
    assert done.returncode == 2
    assert "is not an avo eval results file (format 'something-else'" in done.stderr
    done = avo("eval", str(example_suite), "--case", "nothing-like-this")
    assert done.returncode == 2
    assert "--case nothing-like-this matches no case of" in done.stderr
    assert "cases: summarize-readme, write-notes, fix-typo" in done.stderr
    done = avo("eval", str(example_suite), "-n", "0")
    assert done.returncode == 2 and "0 must be at least 1" in done.stderr


def test_an_unopenable_store_fails_before_any_trial(avo: Any, example_suite: Path) -> None:
    done = avo("eval", str(example_suite), "-d", "/nonexistent-dir/x/avo.db", "--no-progress")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert line.startswith("avo: cannot open the event store /nonexistent-dir/x/avo.db for the")
    assert "pass -d LOCATION" in line and "\n" not in line


def test_yaml_without_pyyaml_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    path = _suite(tmp_path, "cases: []\n", "suite.yaml")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str(info.value) == (
        f"{path}: YAML suites need PyYAML: pip install 'avo-evals[yaml]' "
        "(or write the suite as TOML)"
    )
