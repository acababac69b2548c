"""Every kind of check on real outcomes: the verdict and a reason a person can act on."""

from __future__ import annotations

import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from avo_evals import Check, Outcome, ToolCallRecord, wilson_interval
from avo_evals._toml import dumps
from avo_evals.checks import CheckResult, evaluate


def _outcome(tmp_path: Path, **changes: Any) -> Outcome:
    (tmp_path / "notes.md").write_text("Widget: turns sprockets into gears.\n")
    values: dict[str, Any] = {
        "case": "c",
        "trial": 1,
        "workspace": tmp_path,
        "run_id": "r1",
        "status": "completed",
        "stop_reason": "completed",
        "answer": 'Done. {"ok": true}',
        "steps": 3,
        "input_tokens": 900,
        "output_tokens": 60,
        "latency_seconds": 1.5,
        "tool_calls": [
            ToolCallRecord("read_file", {"path": "README.md"}, "ok", {"content": "x"}),
            ToolCallRecord(
                "write_file", {"path": "notes.md", "content": "x"}, "failed", None, "disk full"
            ),
        ],
    }
    values.update(changes)
    return Outcome(**values)


async def _one(
    subject: Outcome, functions: dict[str, Any] | None = None, **check: Any
) -> CheckResult:
    (result,) = await evaluate([Check(**check)], subject, functions or {})
    return result


@pytest.mark.parametrize(
    ("check", "passed", "reason"),
    [
        ({"answer_contains": "Done"}, True, ""),
        (
            {"answer_contains": ["Done", "gears"]},
            False,
            "the answer lacks 'gears': 'Done. {\"ok\": true}'",
        ),
        ({"answer_contains": "done", "ignore_case": True}, True, ""),
        ({"answer_not_contains": "Done"}, False, "the answer contains 'Done'"),
        ({"answer_matches": r"^Done\."}, True, ""),
        ({"answer_matches": r"^Fail"}, False, "the answer does not match /^Fail/"),
        (
            {"answer_equals_json": {"ok": True}},
            False,
            "the answer is not JSON (Expecting value at 0)",
        ),
        (
            {"tool_called": "read_file", "arguments": {"path": "README.md"}, "outcome": "ok"},
            True,
            "",
        ),
        (
            {"tool_called": "read_file", "arguments": {"path": "x.md"}},
            False,
            "read_file was called, but never with matching arguments: "
            'calls: read_file {"path": "README.md"} -> ok',
        ),
        ({"tool_called": "grep"}, False, "grep was not called: calls: read_file"),
        (
            {"tool_called": "write_file", "outcome": "ok"},
            False,
            "write_file was called but failed: disk full (expected ok)",
        ),
        (
            {"tool_called": "write_file", "arguments_match": {"path": r"\.md$"}, "times": 1},
            True,
            "",
        ),
        (
            {"tool_called": "read_file", "times": 2},
            False,
            "read_file was called 1 times, expected 2",
        ),
        ({"tool_not_called": "write_file"}, False, "write_file was called 1 time: write_file"),
        ({"tool_not_called": "write_file", "arguments": {"path": "other.md"}}, True, ""),
        ({"file": "notes.md", "contains": "sprockets"}, True, ""),
        ({"file": "notes.md", "matches": r"^Gadget"}, False, "notes.md does not match /^Gadget/"),
        (
            {"file": "notes.md", "equals": "x"},
            False,
            "notes.md is 'Widget: turns sprockets into gears.', expected 'x'",
        ),
        (
            {"file": "missing.md"},
            False,
            "missing.md does not exist in the workspace (files: notes.md)",
        ),
        ({"file": "missing.md", "exists": False}, True, ""),
        (
            {"file": "notes.md", "exists": False},
            False,
            "notes.md exists in the workspace (expected it not to)",
        ),
        ({"stop_reason": "max_steps"}, False, "stop_reason is completed, expected max_steps"),
        ({"status": "completed"}, True, ""),
        ({"max_steps": 2}, False, "steps 3 is over the limit 2"),
        ({"max_tokens": 960}, True, ""),
        ({"max_input_tokens": 100}, False, "input tokens 900 is over the limit 100"),
        ({"max_output_tokens": 59}, False, "output tokens 60 is over the limit 59"),
        ({"max_latency_seconds": 1}, False, "latency 1.50s is over the limit 1"),
        ({"max_cost_usd": 0.5}, False, "the cost is unknown (the provider publishes no prices"),
    ],
)
async def test_check_verdicts_and_reasons(
    tmp_path: Path, check: dict[str, Any], passed: bool, reason: str
) -> None:
    result = await _one(_outcome(tmp_path), **check)
    assert result.passed is passed, result
    assert reason in result.reason, result.reason
    assert bool(result.reason) is not passed


async def test_json_answers_cost_and_no_answer(tmp_path: Path) -> None:
    fenced = _outcome(tmp_path, answer='```json\n{"ok": true, "n": 2}\n```')
    assert (await _one(fenced, answer_equals_json={"n": 2, "ok": True})).passed
    wrong = await _one(fenced, answer_equals_json={"n": 3, "ok": True})
    assert (
        wrong.reason == 'the answer\'s JSON is {"n": 2, "ok": true}, expected {"n": 3, "ok": true}'
    )
    priced = _outcome(tmp_path, cost_usd=Decimal("0.012"))
    assert (await _one(priced, max_cost_usd=0.02)).passed
    assert (await _one(priced, max_cost_usd=0.01)).reason == "cost $0.012 is over $0.01"
    failed = _outcome(
        tmp_path, answer=None, status="stopped", stop_reason="max_steps", error="too long"
    )
    result = await _one(failed, answer_contains="x")
    assert (
        result.reason == "there is no final answer (run stopped, stop reason max_steps): too long"
    )


async def test_crashed_trial_fails_once_with_why(tmp_path: Path) -> None:
    crashed = Outcome("c", 2, tmp_path, crash="timed out after 5s")
    results = await evaluate([Check(answer_contains="x"), Check(max_steps=3)], crashed, {})
    assert results == [CheckResult("trial", False, "the trial did not run: timed out after 5s")]


async def test_custom_python_checks(tmp_path: Path) -> None:
    outcome = _outcome(tmp_path)

    def returns(value: Any) -> Any:
        return lambda o, **kw: value

    def asserts(o: Outcome, limit: int) -> None:
        assert o.steps < limit, f"{o.steps} steps, wanted fewer than {limit}"

    async def slow(o: Outcome) -> bool:
        return o.answer is not None

    def boom(o: Outcome) -> None:
        raise KeyError("nope")

    functions = {
        "m.true": returns(True),
        "m.none": returns(None),
        "m.false": returns(False),
        "m.text": returns("the notes are too short"),
        "m.pair": returns((False, "pair reason")),
        "m.result": returns(CheckResult("x", False, "custom result")),
        "m.other": returns(42),
        "m.asserts": asserts,
        "m.slow": slow,
        "m.boom": boom,
    }
    verdicts = {}
    for name in functions:
        args = {"limit": 2} if name == "m.asserts" else {}
        result = await _one(outcome, functions, python=name, args=args)
        verdicts[name] = (result.passed, result.reason)
    assert verdicts == {
        "m.true": (True, ""),
        "m.none": (True, ""),
        "m.false": (False, "m.false returned False"),
        "m.text": (False, "the notes are too short"),
        "m.pair": (False, "pair reason"),
        "m.result": (False, "custom result"),
        "m.other": (False, "m.other returned int; return a bool or a reason"),
        "m.asserts": (False, "3 steps, wanted fewer than 2"),
        "m.slow": (True, ""),
        "m.boom": (False, "the check raised KeyError: 'nope'"),
    }


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(0, 3)
    assert low == 0.0 and round(high, 4) == 0.5615
    low, high = wilson_interval(3, 3)
    assert round(low, 4) == 0.4385 and high == 1.0
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson_interval(95, 100)
    assert (round(low, 4), round(high, 4)) == (0.8882, 0.9785)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="passes must be between 0 and 3"):
        wilson_interval(4, 3)


def test_composed_config_is_written_as_toml_that_reads_back_equal() -> None:
    table = {
        "system_prompt": 'say "hi"\n\tthen \\ stop — ✓',
        "tools": ["grep", {"name": "read_file", "settings": {"workspace": "."}}],
        "provider": {
            "name": "fake",
            "settings": {"script": [{"content": "x", "usage": {"input_tokens": 1}}]},
        },
        "policy": {"max_steps": 3, "max_runtime_seconds": 1.5, "flag": True},
        "weird key": {"a.b": [1, 2.5e-07, False]},
    }
    assert tomllib.loads(dumps(table)) == table
