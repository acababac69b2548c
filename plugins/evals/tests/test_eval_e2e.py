"""``avo eval`` end to end: the real CLI, real plugins, real SQLite, real subprocesses.

The example suite passes; a fork of avo-tools whose ``write_file`` is broken
makes the case that writes a file fail with a readable reason; ``--baseline``
reports the regression with the runs-diff of the first divergent run; the
JUnit report is read by junitparser; every trial is a tagged run in the store.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml

from avo.testing.plugins import write_distribution

pytest.importorskip("avo_tools", reason="the example suite uses the avo-tools workspace tools")
avo_sqlite = pytest.importorskip("avo_sqlite")

BROKEN_FORK = '''
"""A fork of avo-tools whose write_file is broken: the disk is always full."""
from avo.plugins import ToolSpec, provides
from avo_tools.plugin import SPECS


def _broken(settings):
    tool = SPECS["write_file"].factory(settings)

    async def write(arguments):
        raise OSError(28, "No space left on device")

    tool.function = write
    return tool


read_file = provides(SPECS["read_file"])
edit_file = provides(SPECS["edit_file"])
grep = provides(SPECS["grep"])
write_file = provides(
    ToolSpec(
        name="write_file",
        factory=_broken,
        risk=SPECS["write_file"].risk,
        settings_model=SPECS["write_file"].settings_model,
    )
)
'''


def _broken_tools(root: Path) -> dict[str, str]:
    """Env that swaps avo-tools for the broken fork (a real entry-point distribution)."""
    names = ("read_file", "edit_file", "grep", "write_file")
    write_distribution(
        root,
        "avo-tools-fork",
        entry_points={"avo.tools": {name: f"avo_tools_fork:{name}" for name in names}},
        modules={"avo_tools_fork": BROKEN_FORK},
    )
    return {"PYTHONPATH": str(root), "AVO_PLUGINS_BLOCK": "avo-tools"}


async def _runs(db: Path) -> list[Any]:
    async with avo_sqlite.SQLiteEventStore(db) as store:
        return list(await store.list_runs())


def test_example_suite_passes_and_reports(avo: Any, example_suite: Path, tmp_path: Path) -> None:
    done = avo(
        "eval",
        str(example_suite),
        "--no-progress",
        "-o",
        "out/good.json",
        "--junit",
        "out/good.xml",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 cases: 3 passed, 0 failed" in done.stdout
    assert "summarize-readme  3/3" in done.stdout

    data = json.loads((tmp_path / "out" / "good.json").read_text())
    assert data["format"] == "avo-eval-results/1" and data["passed"] is True
    assert data["summary"]["trials"] == 9 and data["summary"]["trials_passed"] == 9
    by_name = {case["name"]: case for case in data["cases"]}
    fix = by_name["fix-typo"]
    assert fix["passes"] == 3 and fix["pass_rate"] == 1.0
    low, high = fix["interval"]
    assert 0.43 < low < 0.44 and high == 1.0  # Wilson 95 % for 3/3
    assert fix["tokens"]["mean"] == 984
    trial = fix["results"][0]
    assert [c["name"] for c in trial["tool_calls"]] == ["grep", "edit_file"]
    assert trial["facts"]["fields"]["status"] == "completed"

    xml = JUnitXml.fromfile(str(tmp_path / "out" / "good.xml"))
    suites = list(xml)
    assert len(suites) == 1 and suites[0].name == "example"
    cases = list(suites[0])
    assert [case.name for case in cases] == ["summarize-readme", "write-notes", "fix-typo"]
    assert all(case.is_passed for case in cases)
    assert suites[0].tests == 3 and suites[0].failures == 0

    # every trial is a normal run in the store, tagged with the eval, suite, case and trial
    runs = asyncio.run(_runs(tmp_path / "avo.db"))
    assert len(runs) == 9
    tags = sorted((r.user_state["eval"]["case"], r.user_state["eval"]["trial"]) for r in runs)
    assert tags[:3] == [("fix-typo", 1), ("fix-typo", 2), ("fix-typo", 3)]
    assert {r.user_state["eval"]["id"] for r in runs} == {data["eval_id"]}
    assert {r.user_state["eval"]["suite"] for r in runs} == {"example"}
    assert f"runs: avo runs list -d {tmp_path / 'avo.db'} --tag eval.id={data['eval_id']}" in (
        done.stdout
    )
    listed = avo(
        "runs", "list", "--tag", f"eval.id={data['eval_id']}", "--tag", "eval.case=fix-typo"
    )
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()[1:]
    assert len(rows) == 3 and all("app.py does not compile" in row for row in rows)


def test_broken_tool_plugin_fails_named_cases_and_baseline_shows_regression(
    avo: Any, example_suite: Path, tmp_path: Path
) -> None:
    good = avo(
        "eval", str(example_suite), "--no-progress", "-o", "good.json", "--junit", "good.xml"
    )
    assert good.returncode == 0, good.stdout + good.stderr

    env = _broken_tools(tmp_path / "fork")
    bad = avo(
        "eval", str(example_suite), "--baseline", "good.json", "-o", "bad.json",
        "--junit", "bad.xml", env=env,
    )  # fmt: skip
    assert bad.returncode == 1, bad.stdout + bad.stderr
    out = bad.stdout
    assert "3 cases: 2 passed, 1 failed" in out
    assert "FAILED write-notes: 0/3 passed (0%, 95% CI 0%-56%), needs 100%" in out
    assert (
        'trials 1, 2, 3: tool_called write_file {"path": "notes.md"}: write_file was called '
        "with matching arguments but failed: Tool 'write_file' raised OSError: [Errno 28] No "
        "space left on device (expected ok)"
    ) in out
    assert "notes.md does not exist in the workspace (files: README.md)" in out
    # the progress went to stderr, one plain line per trial (not a terminal)
    assert "eval: 9/9" in bad.stderr and "write-notes #1 FAIL" in bad.stderr

    # the comparison: a regression, explained by the runs-diff of the first divergent run
    assert "write-notes       3/3 100%  0/3 0%    regressed" in out
    assert "summarize-readme  3/3 100%  3/3 100%  unchanged" in out
    assert "regressed write-notes: first divergent run is trial 1" in out
    assert "* tool calls: first difference at #2: write_file" in out and "-> failed" in out
    assert "regressions: write-notes; improvements: none" in out

    data = json.loads((tmp_path / "bad.json").read_text())
    assert data["comparison"]["regressions"] == ["write-notes"]
    diff = next(c for c in data["comparison"]["cases"] if c["name"] == "write-notes")["diff"]
    assert diff["tool_calls"]["first_difference"] == 1
    assert diff["tool_calls"]["b"][1]["outcome"] == "failed"

    xml = JUnitXml.fromfile(str(tmp_path / "bad.xml"))
    (suite,) = list(xml)
    failed = {case.name: case for case in suite if not case.is_passed}
    assert list(failed) == ["write-notes"]
    (failure,) = [r for r in failed["write-notes"].result if isinstance(r, Failure)]
    assert failure.message.startswith("0/3 passed")
    assert "No space left on device" in failure.text

    # the fixed plugin is back: compared with the broken run, the case improved
    fixed = avo(
        "eval", str(example_suite), "--baseline", "bad.json", "-o", "fixed.json", "--no-progress"
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "regressions: none; improvements: write-notes" in fixed.stdout
