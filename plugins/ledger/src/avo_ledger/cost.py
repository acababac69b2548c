"""Cost reports over a TokenLedger: per run and per model (§17.2), and ``avo cost``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from avo.config import database_location
from avo.exceptions import StorageError
from avo.models import TokenUsage
from avo_sqlite import LedgerEntry, TokenLedger

DATABASE_ENV = "AVO_DATABASE_PATH"


def _add(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    if a is None:
        return b
    return a if b is None else a + b


@dataclass
class ModelCost:
    """Usage and cost of one model (across ``runs`` runs)."""

    model: str
    runs: int
    usage: TokenUsage
    cost_usd: Decimal | None


@dataclass
class RunCost:
    """Usage and cost of one run, split by model."""

    run_id: str
    entries: int
    usage: TokenUsage
    cost_usd: Decimal | None
    by_model: list[ModelCost] = field(default_factory=list)


@dataclass
class CostReport:
    """Everything one ledger database says about spend."""

    database: str
    run_count: int
    total: TokenUsage
    cost_usd: Decimal | None
    runs: list[RunCost]
    models: list[ModelCost]

    def to_text(self) -> str:
        """A human-readable report: totals, a per-run table and a per-model table."""
        lines = [
            f"Token ledger: {self.database}",
            f"Runs: {self.run_count}   Tokens: {_tokens(self.total)}   Cost: {_usd(self.cost_usd)}",
        ]
        if not self.runs:
            lines.append("No ledger entries yet.")
            return "\n".join(lines) + "\n"
        columns = f"{'INPUT':>9}  {'OUTPUT':>9}  {'COST (USD)':>12}"
        header = f"{'RUN':<36}  {'CALLS':>5}  {columns}  MODELS"
        lines += ["", "Per run:", header]
        for run in self.runs:
            models = ", ".join(m.model for m in run.by_model)
            lines.append(
                f"{run.run_id:<36}  {run.entries:>5}  {run.usage.input_tokens:>9}  "
                f"{run.usage.output_tokens:>9}  {_usd(run.cost_usd):>12}  {models}"
            )
        lines += ["", "Per model:"]
        lines.append(f"{'MODEL':<36}  {'RUNS':>5}  {columns}")
        for model in self.models:
            lines.append(
                f"{model.model:<36}  {model.runs:>5}  {model.usage.input_tokens:>9}  "
                f"{model.usage.output_tokens:>9}  {_usd(model.cost_usd):>12}"
            )
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        """The report as JSON (costs as decimal strings, so no precision is lost)."""
        return json.dumps(report_to_dict(self), indent=2, sort_keys=True)


def _tokens(usage: TokenUsage) -> str:
    return f"{usage.input_tokens} in / {usage.output_tokens} out"


def _usd(value: Decimal | None) -> str:
    return "unknown" if value is None else f"{value:.6f}"


def _usage_dict(usage: TokenUsage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


def _model_dict(model: ModelCost) -> dict[str, Any]:
    return {
        "model": model.model,
        "runs": model.runs,
        "usage": _usage_dict(model.usage),
        "cost_usd": None if model.cost_usd is None else str(model.cost_usd),
    }


def report_to_dict(report: CostReport) -> dict[str, Any]:
    """A JSON-ready dict of ``report``."""
    return {
        "database": report.database,
        "run_count": report.run_count,
        "total": _usage_dict(report.total),
        "cost_usd": None if report.cost_usd is None else str(report.cost_usd),
        "runs": [
            {
                "run_id": run.run_id,
                "entries": run.entries,
                "usage": _usage_dict(run.usage),
                "cost_usd": None if run.cost_usd is None else str(run.cost_usd),
                "by_model": [_model_dict(m) for m in run.by_model],
            }
            for run in report.runs
        ],
        "models": [_model_dict(m) for m in report.models],
    }


def build_report(database: str, entries: Sequence[LedgerEntry]) -> CostReport:
    """Aggregate ledger ``entries`` into a report (pure; used by :func:`aggregate_costs`)."""
    runs: dict[str, RunCost] = {}
    run_models: dict[tuple[str, str], ModelCost] = {}
    models: dict[str, ModelCost] = {}
    model_runs: dict[str, set[str]] = {}
    total = TokenUsage()
    cost: Decimal | None = None
    for entry in entries:
        name = entry.model or "unknown"
        total = total.plus(entry.usage)
        cost = _add(cost, entry.cost_usd)
        run = runs.get(entry.run_id)
        if run is None:
            run = runs[entry.run_id] = RunCost(entry.run_id, 0, TokenUsage(), None)
        run.entries += 1
        run.usage = run.usage.plus(entry.usage)
        run.cost_usd = _add(run.cost_usd, entry.cost_usd)
        per_run = run_models.get((entry.run_id, name))
        if per_run is None:
            per_run = run_models[(entry.run_id, name)] = ModelCost(name, 1, TokenUsage(), None)
            run.by_model.append(per_run)
        per_run.usage = per_run.usage.plus(entry.usage)
        per_run.cost_usd = _add(per_run.cost_usd, entry.cost_usd)
        overall = models.get(name)
        if overall is None:
            overall = models[name] = ModelCost(name, 0, TokenUsage(), None)
        model_runs.setdefault(name, set()).add(entry.run_id)
        overall.runs = len(model_runs[name])
        overall.usage = overall.usage.plus(entry.usage)
        overall.cost_usd = _add(overall.cost_usd, entry.cost_usd)
    return CostReport(
        database=database,
        run_count=len(runs),
        total=total,
        cost_usd=cost,
        runs=list(runs.values()),
        models=sorted(models.values(), key=lambda m: m.model),
    )


def aggregate_costs(database: Path | str) -> CostReport:
    """Read every ledger entry in ``database`` and aggregate them."""
    path = Path(database)
    if not path.exists():
        raise StorageError(
            f"no database at {path}: run something with a ledger first, or pass -d PATH"
        )
    with TokenLedger(path) as ledger:
        entries = ledger.entries()
    return build_report(str(path), entries)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo cost`` arguments."""
    parser.add_argument(
        "-d",
        "--database",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the avo database holding the ledger (default: {DATABASE_ENV}, then avo.db)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, *, stdout: Any = None) -> int:
    """Print the cost report for ``args.database``; 0 on success."""
    environ: Mapping[str, str] = getattr(args, "avo_environ", None) or os.environ
    database = args.database or database_location(environ)
    report = aggregate_costs(Path(database).expanduser())
    out = stdout or sys.stdout
    out.write(report.to_json() + "\n" if args.json else report.to_text())
    return 0


def main(argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None) -> int:
    """``avo cost`` as a standalone entry (also what the CommandSpec runs)."""
    from avo.exceptions import AvoError

    parser = argparse.ArgumentParser(prog="avo cost", description="token usage and cost report")
    configure(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    args.avo_environ = environ
    try:
        return run(args)
    except AvoError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        return 2


__all__ = [
    "CostReport",
    "ModelCost",
    "RunCost",
    "aggregate_costs",
    "build_report",
    "configure",
    "main",
    "report_to_dict",
    "run",
]
