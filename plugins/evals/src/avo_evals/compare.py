"""Compare an eval with a baseline results file: regressions and improvements per case.

A case *regressed* when its pass rate fell and *improved* when it rose; the
change is *significant* when the two 95 % Wilson intervals do not overlap.
For each case the trials are paired by number, and the first pair that
diverges (one passed and the other did not; else the first whose runs
differ) is explained with the runs-diff of ``avo runs diff``, computed from
the facts both reports carry, so the baseline's store need not be at hand.
Token, latency and cost changes are given as ratios now / baseline.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avo.exceptions import ConfigError
from avo.run_diff import RunDiff, RunFacts, diff_facts
from avo_evals.report import FORMAT, results_to_dict
from avo_evals.runner import EvalResults


@dataclass
class CaseComparison:
    """One case, before and after."""

    name: str
    change: str
    """``regressed``, ``improved``, ``unchanged``, ``new`` or ``removed``."""
    significant: bool = False
    baseline: dict[str, Any] | None = None
    current: dict[str, Any] | None = None
    ratios: dict[str, float | None] | None = None
    divergent_trial: int | None = None
    diff: RunDiff | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "name": self.name,
            "change": self.change,
            "significant": self.significant,
            "baseline": self.baseline,
            "current": self.current,
            "ratios": self.ratios,
            "divergent_trial": self.divergent_trial,
            "diff": self.diff.to_dict() if self.diff else None,
            "note": self.note,
        }


@dataclass
class Comparison:
    """Every case compared."""

    baseline_file: str
    baseline_eval: str | None
    cases: list[CaseComparison]

    @property
    def regressions(self) -> list[CaseComparison]:
        """The cases whose pass rate fell."""
        return [case for case in self.cases if case.change == "regressed"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "baseline_file": self.baseline_file,
            "baseline_eval": self.baseline_eval,
            "regressions": [case.name for case in self.regressions],
            "improvements": [c.name for c in self.cases if c.change == "improved"],
            "cases": [case.to_dict() for case in self.cases],
        }


def load_baseline(path: str | Path) -> dict[str, Any]:
    """A results JSON written by ``avo eval`` (refused with a fix when it is not one)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"baseline {file} does not exist; pass the results JSON an earlier `avo eval` wrote "
            "(--output)",
            key="baseline",
            file=str(file),
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"baseline {file} is not JSON ({exc}); pass the results JSON an earlier `avo eval` "
            "wrote",
            key="baseline",
            file=str(file),
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ConfigError(
            f"baseline {file} is not an avo eval results file (format {found!r}, expected "
            f"{FORMAT!r}); pass the JSON an earlier `avo eval` wrote",
            key="baseline",
            file=str(file),
        )
    return data


def _rate(case: dict[str, Any]) -> dict[str, Any]:
    return {
        "passes": case["passes"],
        "trials": case["trials"],
        "pass_rate": case["pass_rate"],
        "interval": case["interval"],
    }


def _ratio(now: float | None, before: float | None) -> float | None:
    if now is None or before is None or before == 0:
        return None
    return now / before


def _cost(value: Any) -> float | None:
    return None if value is None else float(value)


def _divergence(
    before: list[dict[str, Any]], now: list[dict[str, Any]]
) -> tuple[int | None, RunDiff | None, str | None]:
    pairs = list(zip(before, now, strict=False))
    order = [p for p in pairs if p[0]["passed"] != p[1]["passed"]]
    order += [p for p in pairs if p not in order]
    for old, new in order:
        if old.get("facts") is None or new.get("facts") is None:
            if old["passed"] != new["passed"]:
                crash = new.get("crash") or old.get("crash") or "no run was recorded"
                return new["trial"], None, f"trial {new['trial']} has no run to diff: {crash}"
            continue
        diff = diff_facts(RunFacts.from_dict(old["facts"]), RunFacts.from_dict(new["facts"]))
        if old["passed"] != new["passed"] or not diff.same:
            return new["trial"], diff, None
    return None, None, None


def compare(
    results: EvalResults,
    baseline: dict[str, Any],
    baseline_file: str,
    *,
    skipped: Collection[str] = (),
) -> Comparison:
    """Compare ``results`` with a loaded baseline, case by case.

    ``skipped`` names cases of the suite that were not run this time (``--case``):
    they are left out instead of being reported as removed.
    """
    current = {case["name"]: case for case in results_to_dict(results)["cases"]}
    before = {case["name"]: case for case in baseline.get("cases", [])}
    compared: list[CaseComparison] = []
    for name, case in current.items():
        old = before.get(name)
        if old is None:
            compared.append(CaseComparison(name, "new", current=_rate(case)))
            continue
        rate_now, rate_before = case["pass_rate"], old["pass_rate"]
        change = (
            "regressed"
            if rate_now < rate_before
            else "improved"
            if rate_now > rate_before
            else "unchanged"
        )
        low_now, high_now = case["interval"]
        low_before, high_before = old["interval"]
        significant = high_now < low_before or low_now > high_before
        ratios = {
            "tokens": _ratio(case["tokens"]["mean"], old["tokens"]["mean"]),
            "latency": _ratio(case["latency_seconds"]["mean"], old["latency_seconds"]["mean"]),
            "cost": _ratio(_cost(case["cost_usd"]), _cost(old["cost_usd"])),
        }
        trial, diff, note = _divergence(old.get("results", []), case["results"])
        compared.append(
            CaseComparison(
                name,
                change,
                significant=significant,
                baseline=_rate(old),
                current=_rate(case),
                ratios=ratios,
                divergent_trial=trial,
                diff=diff,
                note=note,
            )
        )
    for name, old in before.items():
        if name not in current and name not in skipped:
            compared.append(CaseComparison(name, "removed", baseline=_rate(old)))
    return Comparison(baseline_file, baseline.get("eval_id"), compared)


def _cell(rate: dict[str, Any] | None) -> str:
    if rate is None:
        return "-"
    return f"{rate['passes']}/{rate['trials']} {rate['pass_rate'] * 100:.0f}%"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def to_text(comparison: Comparison) -> str:
    """A table of the changes, then the runs-diff of each changed case's first divergent run."""
    header = ("CASE", "BASELINE", "NOW", "CHANGE", "TOKENS", "LATENCY", "COST")
    rows = []
    for case in comparison.cases:
        change = case.change + (" (significant)" if case.significant else "")
        ratios = case.ratios or {}
        rows.append(
            (
                case.name,
                _cell(case.baseline),
                _cell(case.current),
                change,
                _x(ratios.get("tokens")),
                _x(ratios.get("latency")),
                _x(ratios.get("cost")),
            )
        )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        f"compared with baseline {comparison.baseline_file} (eval {comparison.baseline_eval}):"
    ]
    for row in [header, *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    for case in comparison.cases:
        if case.change not in ("regressed", "improved") and case.diff is None:
            continue
        if case.note:
            lines += ["", f"{case.change} {case.name}: {case.note}"]
        elif case.diff is not None:
            lines += [
                "",
                f"{case.change} {case.name}: first divergent run is trial {case.divergent_trial} "
                f"(A = baseline, B = now):",
            ]
            lines += [f"  {line}" if line else "" for line in case.diff.to_text().splitlines()]
    regressions = [case.name for case in comparison.regressions]
    improvements = [case.name for case in comparison.cases if case.change == "improved"]
    lines += [
        "",
        f"regressions: {', '.join(regressions) or 'none'}; "
        f"improvements: {', '.join(improvements) or 'none'}",
    ]
    return "\n".join(lines) + "\n"


__all__ = ["CaseComparison", "Comparison", "compare", "load_baseline", "to_text"]
