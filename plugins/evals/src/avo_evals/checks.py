"""A trial's outcome and the checks that judge it.

Every check returns a :class:`CheckResult` whose ``reason`` says, in one line,
what was expected and what happened, so a failing case reads like a bug
report. A custom check is any Python function named by dotted path; it gets
the :class:`Outcome` (plus the check's ``args`` as keywords) and returns
``True``/``None`` (pass), ``False`` or a string (fail, the string being the
reason), a ``(passed, reason)`` pair or a :class:`CheckResult`; an
``AssertionError`` fails the check with its message.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from avo.run_diff import RunFacts
from avo_evals.suite import Check, Suite, SuiteError


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of a trial; ``outcome`` is "ok", "failed", "denied" or "no result"."""

    name: str
    arguments: Any
    outcome: str
    output: Any = None
    error: str | None = None

    def label(self) -> str:
        """``name {arguments} -> outcome``."""
        arguments = json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)
        shown = self.outcome
        if self.outcome in ("failed", "denied") and self.error:
            shown = f"{self.outcome}: {self.error}"
        return f"{self.name} {_short(arguments, 60)} -> {_short(shown, 80)}"


@dataclass
class Outcome:
    """What one trial did: the run's result, its tool calls and its workspace."""

    case: str
    trial: int
    workspace: Path
    run_id: str | None = None
    status: str = "error"
    stop_reason: str | None = None
    answer: str | None = None
    error: str | None = None
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal | None = None
    latency_seconds: float = 0.0
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    facts: RunFacts | None = None
    crash: str | None = None
    """Set when the trial produced no run (it could not start, crashed or timed out)."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def file(self, path: str) -> Path:
        """A path inside this trial's workspace."""
        return self.workspace / path


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict on one trial."""

    check: str
    passed: bool
    reason: str = ""


UNATTENDED = (
    "; trials are unattended, so a call that needs approval is denied unless the case's "
    "config sets [permission] mode (e.g. accept_edits)"
)


def describe(check: Check) -> str:
    """A short label for ``check`` (its ``label`` when it has one)."""
    if check.label:
        return check.label
    kind = check.kind
    value = getattr(check, kind)
    text = f"{kind} {_short(json.dumps(value, ensure_ascii=False), 50)}"
    if kind in ("tool_called", "tool_not_called"):
        text = f"{kind} {value}"
        if check.arguments:
            text += f" {_short(json.dumps(check.arguments, sort_keys=True), 50)}"
        if check.arguments_match:
            text += f" matching {_short(json.dumps(check.arguments_match, sort_keys=True), 50)}"
    elif kind == "file":
        parts = [
            f"{name} {_short(json.dumps(getattr(check, name)), 40)}"
            for name in ("exists", "contains", "matches", "equals")
            if name in check.model_fields_set
        ]
        text = f"file {value}" + (f" ({', '.join(parts)})" if parts else "")
    elif kind == "python":
        text = f"python {value}"
    return text


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _no_answer(outcome: Outcome) -> str:
    detail = f": {_short(outcome.error, 120)}" if outcome.error else ""
    run = f"run {outcome.status}, stop reason {outcome.stop_reason}"
    return f"there is no final answer ({run}){detail}"


def _answer(check: Check, outcome: Outcome) -> tuple[bool, str]:
    kind = check.kind
    answer = outcome.answer
    if answer is None:
        return False, _no_answer(outcome)
    if kind in ("answer_contains", "answer_not_contains"):
        wanted = check.answer_contains if kind == "answer_contains" else check.answer_not_contains
        needles = [wanted] if isinstance(wanted, str) else list(wanted or [])
        haystack = answer.lower() if check.ignore_case else answer
        found = [n for n in needles if (n.lower() if check.ignore_case else n) in haystack]
        if kind == "answer_contains":
            missing = [n for n in needles if n not in found]
            if missing:
                shown = ", ".join(repr(n) for n in missing)
                return False, f"the answer lacks {shown}: {_short(answer)!r}"
            return True, ""
        if found:
            shown = ", ".join(repr(n) for n in found)
            return False, f"the answer contains {shown}: {_short(answer)!r}"
        return True, ""
    if kind == "answer_matches":
        if re.search(check.answer_matches or "", answer):
            return True, ""
        return False, f"the answer does not match /{check.answer_matches}/: {_short(answer)!r}"
    text = answer.strip()
    fence = re.fullmatch(r"```[A-Za-z0-9_-]*\s*\n(.*?)\n?```", text, re.S)
    if fence:
        text = fence.group(1).strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return False, f"the answer is not JSON ({exc.msg} at {exc.pos}): {_short(answer)!r}"
    if value == check.answer_equals_json:
        return True, ""
    expected = _short(json.dumps(check.answer_equals_json, sort_keys=True), 60)
    return (
        False,
        f"the answer's JSON is {_short(json.dumps(value, sort_keys=True), 60)}, "
        f"expected {expected}",
    )


def _args_match(check: Check, call: ToolCallRecord) -> bool:
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    for key, value in (check.arguments or {}).items():
        if key not in arguments or arguments[key] != value:
            return False
    for key, pattern in (check.arguments_match or {}).items():
        if key not in arguments:
            return False
        actual = arguments[key]
        text = actual if isinstance(actual, str) else json.dumps(actual, sort_keys=True)
        if not re.search(pattern, text):
            return False
    return True


def _calls(outcome: Outcome) -> str:
    if not outcome.tool_calls:
        return "no tool was called"
    shown = "; ".join(call.label() for call in outcome.tool_calls[:6])
    more = len(outcome.tool_calls) - 6
    return f"calls: {shown}" + (f"; and {more} more" if more > 0 else "")


def _tools(check: Check, outcome: Outcome) -> tuple[bool, str]:
    name = check.tool_called or check.tool_not_called
    named = [call for call in outcome.tool_calls if call.name == name]
    matching = [call for call in named if _args_match(check, call)]
    with_args = " with matching arguments" if check.arguments or check.arguments_match else ""
    if check.kind == "tool_not_called":
        if matching:
            times = f"{len(matching)} time{'s' if len(matching) > 1 else ''}"
            return False, f"{name} was called{with_args} {times}: {matching[0].label()}"
        return True, ""
    if not matching:
        if named and with_args:
            return False, f"{name} was called, but never{with_args}: {_calls(outcome)}"
        return False, f"{name} was not called: {_calls(outcome)}"
    if check.outcome is not None:
        good = [call for call in matching if call.outcome == check.outcome]
        if not good:
            bad = matching[0]
            got = bad.outcome
            if bad.outcome in ("failed", "denied") and bad.error:
                got = f"{bad.outcome}: {bad.error}"
            hint = UNATTENDED if bad.outcome == "denied" else ""
            return False, (
                f"{name} was called{with_args} but {_short(got, 160)} (expected {check.outcome})"
                + hint
            )
        matching = good
    if check.times is not None and len(matching) != check.times:
        return False, f"{name} was called{with_args} {len(matching)} times, expected {check.times}"
    return True, ""


def _listing(workspace: Path) -> str:
    files = sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*") if p.is_file())
    if not files:
        return "the workspace is empty"
    shown = ", ".join(files[:10])
    return f"files: {shown}" + (f" and {len(files) - 10} more" if len(files) > 10 else "")


def _file(check: Check, outcome: Outcome) -> tuple[bool, str]:
    path = outcome.file(check.file or "")
    wants = check.exists if check.exists is not None else True
    if not path.is_file():
        if wants:
            return (
                False,
                f"{check.file} does not exist in the workspace ({_listing(outcome.workspace)})",
            )
        return True, ""
    if not wants:
        return False, f"{check.file} exists in the workspace (expected it not to)"
    text = path.read_text(encoding="utf-8", errors="replace")
    if check.contains is not None and check.contains not in text:
        return False, f"{check.file} lacks {check.contains!r}: {_short(text)!r}"
    if check.matches is not None and not re.search(check.matches, text):
        return False, f"{check.file} does not match /{check.matches}/: {_short(text)!r}"
    if check.equals is not None and text != check.equals:
        return False, f"{check.file} is {_short(text)!r}, expected {_short(check.equals)!r}"
    return True, ""


def _limit(check: Check, outcome: Outcome) -> tuple[bool, str]:
    kind = check.kind
    limit = getattr(check, kind)
    if kind == "max_cost_usd":
        if outcome.cost_usd is None:
            return False, (
                "the cost is unknown (the provider publishes no prices for this model); set "
                "AVO_USAGE_RATES=in,out (USD per 1k tokens) or drop this check"
            )
        actual: Any = outcome.cost_usd
        if actual <= Decimal(str(limit)):
            return True, ""
        return False, f"cost ${actual} is over ${limit}"
    measured = {
        "max_steps": ("steps", outcome.steps),
        "max_tokens": ("tokens", outcome.total_tokens),
        "max_input_tokens": ("input tokens", outcome.input_tokens),
        "max_output_tokens": ("output tokens", outcome.output_tokens),
        "max_latency_seconds": ("latency", outcome.latency_seconds),
    }
    what, actual = measured[kind]
    if actual <= limit:
        return True, ""
    shown = f"{actual:.2f}s" if kind == "max_latency_seconds" else str(actual)
    return False, f"{what} {shown} is over the limit {limit}"


def resolve_function(dotted_path: str, search: Path | None = None) -> Callable[..., Any]:
    """The function at ``module.function`` / ``module:function`` (``search`` is tried first)."""
    module_name, _, attr = dotted_path.replace(":", ".").rpartition(".")
    if search is not None and str(search) not in sys.path:
        sys.path.insert(0, str(search))
    module = importlib.import_module(module_name)
    function = getattr(module, attr)
    if not callable(function):
        raise TypeError(f"{dotted_path} is a {type(function).__name__}, not a function")
    return function  # type: ignore[no-any-return]


def resolve_python_checks(suite: Suite) -> dict[str, Callable[..., Any]]:
    """Import every custom check of ``suite`` now, so a typo fails before any trial runs."""
    found: dict[str, Callable[..., Any]] = {}
    for index, case in enumerate(suite.cases):
        for number, check in enumerate(case.checks):
            if check.python is None or check.python in found:
                continue
            try:
                found[check.python] = resolve_function(check.python, suite.directory)
            except Exception as exc:
                key = f"cases[{index}].checks[{number}].python"
                raise SuiteError(
                    f"{suite.path}: {key}: cannot load {check.python!r} "
                    f"({type(exc).__name__}: {exc}); put the module beside the suite file or "
                    "on PYTHONPATH",
                    key=key,
                    file=str(suite.path),
                ) from None
    return found


async def _python(
    check: Check, outcome: Outcome, functions: dict[str, Callable[..., Any]]
) -> tuple[bool, str]:
    function = functions[check.python or ""]
    try:
        verdict = function(outcome, **check.args)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except AssertionError as exc:
        first = str(exc).strip().splitlines()[:1]  # pytest-style rewriting adds lines
        return False, first[0] if first else "assertion failed"
    except Exception as exc:
        return False, f"the check raised {type(exc).__name__}: {exc}"
    if verdict is None or verdict is True:
        return True, ""
    if verdict is False:
        return False, f"{check.python} returned False"
    if isinstance(verdict, str):
        return False, verdict
    if isinstance(verdict, CheckResult):
        return verdict.passed, verdict.reason
    if isinstance(verdict, tuple) and len(verdict) == 2:
        return bool(verdict[0]), str(verdict[1])
    return False, f"{check.python} returned {type(verdict).__name__}; return a bool or a reason"


async def evaluate(
    checks: list[Check], outcome: Outcome, functions: dict[str, Callable[..., Any]]
) -> list[CheckResult]:
    """Every check's verdict on ``outcome`` (one failing "trial" result when it never ran)."""
    if outcome.crash is not None:
        return [CheckResult("trial", False, f"the trial did not run: {outcome.crash}")]
    results = []
    for check in checks:
        kind = check.kind
        if kind.startswith("answer_"):
            passed, reason = _answer(check, outcome)
        elif kind in ("tool_called", "tool_not_called"):
            passed, reason = _tools(check, outcome)
        elif kind == "file":
            passed, reason = _file(check, outcome)
        elif kind in ("status", "stop_reason"):
            actual = outcome.status if kind == "status" else outcome.stop_reason
            expected = getattr(check, kind)
            passed = actual == expected
            detail = f": {_short(outcome.error, 120)}" if outcome.error and not passed else ""
            reason = "" if passed else f"{kind} is {actual}, expected {expected}{detail}"
        elif kind == "python":
            passed, reason = await _python(check, outcome, functions)
        else:
            passed, reason = _limit(check, outcome)
        results.append(CheckResult(describe(check), passed, reason))
    return results


__all__ = [
    "CheckResult",
    "Outcome",
    "ToolCallRecord",
    "describe",
    "evaluate",
    "resolve_function",
    "resolve_python_checks",
]
