"""Reports of an eval: the results JSON, a JUnit XML file and the terminal summary.

The JSON (format ``avo-eval-results/1``) carries every trial with its checks,
its run id, its metrics and its runs-diff facts, so a later ``avo eval
--baseline`` can compare against it on another machine, without the store
the baseline's runs were recorded in. The JUnit file has one ``testcase`` per
case (a failure when the pass rate is under the case's ``min_pass_rate``),
which CI systems display as tests.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from decimal import Decimal
from typing import Any

from avo_evals.runner import CaseResult, EvalResults, TrialResult
from avo_evals.stats import summary

FORMAT = "avo-eval-results/1"


def _cost(values: list[Decimal | None]) -> str | None:
    known = [value for value in values if value is not None]
    return str(sum(known, Decimal(0))) if known and len(known) == len(values) else None


def _trial_dict(trial: TrialResult) -> dict[str, Any]:
    o = trial.outcome
    return {
        "trial": o.trial,
        "passed": trial.passed,
        "run_id": o.run_id,
        "status": o.status,
        "stop_reason": o.stop_reason,
        "answer": o.answer,
        "error": o.error,
        "crash": o.crash,
        "steps": o.steps,
        "input_tokens": o.input_tokens,
        "output_tokens": o.output_tokens,
        "cost_usd": None if o.cost_usd is None else str(o.cost_usd),
        "latency_seconds": round(o.latency_seconds, 6),
        "tool_calls": [call.__dict__ for call in o.tool_calls],
        "checks": [check.__dict__ for check in trial.checks],
        "facts": o.facts.to_dict() if o.facts else None,
    }


def case_metrics(case: CaseResult) -> dict[str, Any]:
    """Pass rate with its interval, and latency, tokens, steps and cost over the trials."""
    outcomes = [trial.outcome for trial in case.trials]
    low, high = case.interval
    return {
        "trials": len(case.trials),
        "passes": case.passes,
        "pass_rate": case.pass_rate,
        "interval": [low, high],
        "latency_seconds": summary([o.latency_seconds for o in outcomes]),
        "tokens": summary([float(o.total_tokens) for o in outcomes]),
        "steps": summary([float(o.steps) for o in outcomes]),
        "cost_usd": _cost([o.cost_usd for o in outcomes]),
    }


def results_to_dict(results: EvalResults) -> dict[str, Any]:
    """A JSON-ready dict of ``results``."""
    cases = []
    for case in results.cases:
        cases.append(
            {
                "name": case.name,
                "task": case.task,
                "passed": case.passed,
                "min_pass_rate": case.min_pass_rate,
                **case_metrics(case),
                "results": [_trial_dict(trial) for trial in case.trials],
            }
        )
    trials = [trial for case in results.cases for trial in case.trials]
    return {
        "format": FORMAT,
        "suite": results.suite,
        "suite_file": results.suite_file,
        "eval_id": results.eval_id,
        "store": results.store,
        "provider": results.provider,
        "model": results.model,
        "started_at": results.started_at.isoformat(),
        "finished_at": results.finished_at.isoformat(),
        "duration_seconds": (results.finished_at - results.started_at).total_seconds(),
        "passed": results.passed,
        "confidence": 0.95,
        "summary": {
            "cases": len(results.cases),
            "cases_passed": sum(1 for case in results.cases if case.passed),
            "trials": len(trials),
            "trials_passed": sum(1 for trial in trials if trial.passed),
            "tokens": sum(trial.outcome.total_tokens for trial in trials),
            "cost_usd": _cost([trial.outcome.cost_usd for trial in trials]),
        },
        "cases": cases,
    }


def to_json(results: EvalResults) -> str:
    """:func:`results_to_dict` as indented JSON."""
    return json.dumps(results_to_dict(results), indent=2, ensure_ascii=False)


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def failure_lines(case: CaseResult, limit: int = 5) -> list[str]:
    """``trials 1, 3: check: reason`` for a case's failing checks (same reasons grouped)."""
    grouped: dict[tuple[str, str], list[int]] = {}
    for trial in case.trials:
        for check in trial.failures():
            grouped.setdefault((check.check, check.reason), []).append(trial.outcome.trial)
    lines = []
    for (label, reason), trials in grouped.items():
        which = ", ".join(str(n) for n in trials)
        lines.append(f"trial{'s' if len(trials) > 1 else ''} {which}: {label}: {reason}")
    if len(lines) > limit:
        lines = [*lines[:limit], f"... and {len(lines) - limit} more"]
    return lines


def verdict(case: CaseResult) -> str:
    """``2/3 passed (67%, 95% CI 21%-94%)``."""
    low, high = case.interval
    return (
        f"{case.passes}/{len(case.trials)} passed ({_percent(case.pass_rate)}, "
        f"95% CI {_percent(low)}-{_percent(high)})"
    )


def to_junit(results: EvalResults) -> str:
    """A JUnit XML document: one testsuite, one testcase per case."""
    failures = sum(1 for case in results.cases if not case.passed)
    total_time = sum(t.outcome.latency_seconds for c in results.cases for t in c.trials)
    suites = ET.Element("testsuites", name="avo eval", tests=str(len(results.cases)))
    suites.set("failures", str(failures))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=results.suite,
        tests=str(len(results.cases)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=f"{total_time:.3f}",
        timestamp=results.started_at.replace(tzinfo=None).isoformat(timespec="seconds"),
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("eval_id", results.eval_id),
        ("store", results.store),
        ("provider", results.provider or ""),
        ("model", results.model or ""),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    for case in results.cases:
        time = sum(trial.outcome.latency_seconds for trial in case.trials)
        element = ET.SubElement(
            suite, "testcase", classname=results.suite, name=case.name, time=f"{time:.3f}"
        )
        case_properties = ET.SubElement(element, "properties")
        low, high = case.interval
        figures: tuple[tuple[str, object], ...] = (
            ("trials", len(case.trials)),
            ("passes", case.passes),
            ("pass_rate", f"{case.pass_rate:.4f}"),
            ("interval_low", f"{low:.4f}"),
            ("interval_high", f"{high:.4f}"),
            ("min_pass_rate", case.min_pass_rate),
        )
        for label, figure in figures:
            ET.SubElement(case_properties, "property", name=label, value=str(figure))
        if not case.passed:
            failure = ET.SubElement(
                element,
                "failure",
                message=f"{verdict(case)}; needs {_percent(case.min_pass_rate)}",
                type="EvalFailure",
            )
            failure.text = "\n".join(failure_lines(case, limit=50))
        runs = "\n".join(
            f"trial {t.outcome.trial}: {'pass' if t.passed else 'FAIL'} "
            f"run {t.outcome.run_id or '-'}"
            for t in case.trials
        )
        ET.SubElement(element, "system-out").text = runs
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _money(value: str | None) -> str:
    return "unknown" if value is None else f"${Decimal(value):.4f}"


def to_text(results: EvalResults) -> str:
    """The terminal summary: one row per case, then the reasons of the failures."""
    header = ("CASE", "PASSED", "RATE", "95% CI", "TOKENS/TRIAL", "LATENCY", "COST")
    rows = []
    for case in results.cases:
        metrics = case_metrics(case)
        low, high = case.interval
        mark = "" if case.passed else " !"
        rows.append(
            (
                case.name + mark,
                f"{case.passes}/{len(case.trials)}",
                _percent(case.pass_rate),
                f"{_percent(low)}-{_percent(high)}",
                f"{metrics['tokens']['mean']:.0f}",
                f"{metrics['latency_seconds']['mean']:.2f}s",
                _money(metrics["cost_usd"]),
            )
        )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [f"suite {results.suite} ({results.suite_file})", ""]
    for row in [header, *rows]:
        lines.append(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    failed = [case for case in results.cases if not case.passed]
    if failed:
        lines.append("")
        for case in failed:
            lines.append(
                f"FAILED {case.name}: {verdict(case)}, needs {_percent(case.min_pass_rate)}"
            )
            lines += [f"  {line}" for line in failure_lines(case)]
    passed = len(results.cases) - len(failed)
    lines += [
        "",
        f"{len(results.cases)} cases: {passed} passed, {len(failed)} failed "
        f"(eval {results.eval_id})",
        f"runs: avo runs list -d {results.store} --tag eval.id={results.eval_id}",
    ]
    return "\n".join(lines) + "\n"


__all__ = [
    "FORMAT",
    "case_metrics",
    "failure_lines",
    "results_to_dict",
    "to_json",
    "to_junit",
    "to_text",
    "verdict",
]
