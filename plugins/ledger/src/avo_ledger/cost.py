"""Cost reports over a TokenLedger: per run and per model, and ``avo cost``.

A ledger row priced when it was recorded keeps that cost. A row recorded
without one is priced when the report is made, from (in order) ``[pricing]``
in avo.toml, the ``[budget]`` rates of the configuration, the
``AVO_USAGE_RATES_*`` variables, and the prices the installed provider plugins
declare for its model (their catalogs). A total that
includes rows nobody can price says so: it is partial, and the runs without a
price are named.

First, ``avo cost`` records the model calls the log of the SQLite store the
ledger lives in holds and the ledger lacks (:mod:`avo_ledger.sync`).

Rows keep the tokens read from and written to the vendor's prompt cache: the
report shows them and what caching saved (the cached tokens at the input price
minus what they cost at the cache prices), per run, per model and in total.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avo.exceptions import StorageError
from avo.models import TokenUsage
from avo_ledger.sync import bring_up_to_date
from avo_sqlite import LedgerEntry, TokenLedger

if TYPE_CHECKING:
    from avo.pricing import PriceBook

DATABASE_ENV = "AVO_DATABASE_PATH"


def _add(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    if a is None:
        return b
    return a if b is None else a + b


Pricer = Callable[[str | None, TokenUsage], Decimal | None]
"""Prices a ledger row recorded without a cost: (model, usage) -> USD or None."""


@dataclass
class ModelCost:
    """Usage and cost of one model (across ``runs`` runs)."""

    model: str
    runs: int
    usage: TokenUsage
    cost_usd: Decimal | None
    unpriced: int = 0
    saved_usd: Decimal | None = None
    """What prompt caching saved on these calls (None when no cached call has a price)."""


@dataclass
class RunCost:
    """Usage and cost of one run, split by model."""

    run_id: str
    entries: int
    usage: TokenUsage
    cost_usd: Decimal | None
    by_model: list[ModelCost] = field(default_factory=list)
    unpriced: int = 0
    saved_usd: Decimal | None = None


@dataclass
class CostReport:
    """Everything one ledger database says about spend."""

    database: str
    run_count: int
    total: TokenUsage
    cost_usd: Decimal | None
    runs: list[RunCost]
    models: list[ModelCost]
    saved_usd: Decimal | None = None
    """What prompt caching saved over every priced call with cached tokens."""

    @property
    def unpriced_runs(self) -> list[str]:
        """Runs with at least one model call no price is known for."""
        return [run.run_id for run in self.runs if run.unpriced]

    @property
    def partial(self) -> bool:
        """True when the total leaves out calls that could not be priced."""
        return bool(self.unpriced_runs) and self.cost_usd is not None

    def _total_cost(self) -> str:
        missing = len(self.unpriced_runs)
        if self.cost_usd is None:
            return "unknown (no price is known for any model call)" if self.runs else "-"
        if missing:
            return (
                f"{_usd(self.cost_usd)} USD, partial: {missing} of {self.run_count} "
                f"run{'s' if self.run_count != 1 else ''} include calls with no known price"
            )
        return f"{_usd(self.cost_usd)} USD"

    def to_text(self) -> str:
        """A human-readable report: totals, a per-run table and a per-model table."""
        lines = [
            f"Token ledger: {self.database}",
            f"Runs: {self.run_count}   Tokens: {_tokens(self.total)}   Cost: {self._total_cost()}",
        ]
        if not self.runs:
            lines.append(
                "No ledger entries yet. (`avo cost --events` prices the runs in the event "
                "store without a ledger.)"
            )
            return "\n".join(lines) + "\n"
        cached = _cached(self.total)
        if cached:
            lines.append(
                f"Prompt cache: {self.total.cache_read_tokens} read / "
                f"{self.total.cache_write_tokens} written   Saved: {_saved(self.saved_usd)}"
            )
        columns = f"{'INPUT':>9}  {'CACHED':>9}  {'OUTPUT':>9}  {'COST (USD)':>12}  {'SAVED':>9}"
        header = f"{'RUN':<36}  {'CALLS':>5}  {columns}  MODELS"
        lines += ["", "Per run:", header]
        for run in self.runs:
            models = ", ".join(m.model for m in run.by_model)
            lines.append(
                f"{run.run_id:<36}  {run.entries:>5}  {_row(run.usage, run.cost_usd, run.unpriced)}"
                f"  {_saved(run.saved_usd, run.usage):>9}  {models}"
            )
        lines += ["", "Per model:"]
        lines.append(f"{'MODEL':<36}  {'RUNS':>5}  {columns}")
        for model in self.models:
            lines.append(
                f"{model.model:<36}  {model.runs:>5}  "
                f"{_row(model.usage, model.cost_usd, model.unpriced)}"
                f"  {_saved(model.saved_usd, model.usage):>9}"
            )
        if self.unpriced_runs:
            unpriced = sorted({m.model for m in self.models if m.unpriced})
            which = (
                "some calls (a cost marked * leaves them out)" if self.partial else "these calls"
            )
            lines += [
                "",
                f"No price is known for {which}: give each model its prices in avo.toml "
                f'([pricing."{unpriced[0] if unpriced else "provider/model"}"] input = ..., '
                "output = ..., USD per million tokens), or set flat rates with [budget] "
                "input_per_1k / output_per_1k or AVO_USAGE_RATES_INPUT_PER_1K / _OUTPUT_PER_1K.",
            ]
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        """The report as JSON (costs as decimal strings, so no precision is lost)."""
        return json.dumps(report_to_dict(self), indent=2, sort_keys=True)


def _tokens(usage: TokenUsage) -> str:
    return f"{usage.input_tokens} in / {usage.output_tokens} out"


def _cached(usage: TokenUsage) -> int:
    return usage.cache_read_tokens + usage.cache_write_tokens


def _row(usage: TokenUsage, cost: Decimal | None, unpriced: int) -> str:
    return (
        f"{usage.input_tokens:>9}  {_cached(usage):>9}  {usage.output_tokens:>9}  "
        f"{_usd(cost, unpriced):>12}"
    )


def _saved(value: Decimal | None, usage: TokenUsage | None = None) -> str:
    """What caching saved: ``-`` with no cached tokens, ``unknown`` when unpriced."""
    if usage is not None and not _cached(usage):
        return "-"
    if value is None:
        return "unknown"
    return f"{value:.6f}" if usage is not None else f"{value:.6f} USD"


def _usd(value: Decimal | None, unpriced: int = 0) -> str:
    if value is None:
        return "unknown"
    return f"{value:.6f}*" if unpriced else f"{value:.6f}"


def _usage_dict(usage: TokenUsage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def _str(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _model_dict(model: ModelCost) -> dict[str, Any]:
    return {
        "model": model.model,
        "runs": model.runs,
        "usage": _usage_dict(model.usage),
        "cost_usd": None if model.cost_usd is None else str(model.cost_usd),
        "unpriced_calls": model.unpriced,
        "saved_usd": _str(model.saved_usd),
    }


def report_to_dict(report: CostReport) -> dict[str, Any]:
    """A JSON-ready dict of ``report``."""
    return {
        "database": report.database,
        "run_count": report.run_count,
        "total": _usage_dict(report.total),
        "cost_usd": None if report.cost_usd is None else str(report.cost_usd),
        "cost_partial": report.partial,
        "saved_usd": _str(report.saved_usd),
        "unpriced_runs": report.unpriced_runs,
        "runs": [
            {
                "run_id": run.run_id,
                "entries": run.entries,
                "usage": _usage_dict(run.usage),
                "cost_usd": None if run.cost_usd is None else str(run.cost_usd),
                "unpriced_calls": run.unpriced,
                "saved_usd": _str(run.saved_usd),
                "by_model": [_model_dict(m) for m in run.by_model],
            }
            for run in report.runs
        ],
        "models": [_model_dict(m) for m in report.models],
    }


def build_report(
    database: str,
    entries: Sequence[LedgerEntry],
    *,
    price: Pricer | None = None,
    book: PriceBook | None = None,
) -> CostReport:
    """Aggregate ledger ``entries`` into a report (pure; used by :func:`aggregate_costs`).

    ``book`` prices rows recorded without a cost (by their provider and model) and
    says what caching saved on each row with cached tokens; else ``price`` prices
    them. Rows nobody can price count as unpriced.
    """
    from avo.pricing import COST_QUANTUM

    saved: Decimal | None = None
    runs: dict[str, RunCost] = {}
    run_models: dict[tuple[str, str], ModelCost] = {}
    models: dict[str, ModelCost] = {}
    model_runs: dict[str, set[str]] = {}
    total = TokenUsage()
    cost: Decimal | None = None
    for entry in entries:
        name = entry.model or "unknown"
        entry_cost = entry.cost_usd
        entry_saved: Decimal | None = None
        if book is not None:
            found = book.cost(entry.provider, entry.model, entry.usage)
            if found is not None:
                if entry_cost is None:
                    entry_cost = found.total.quantize(COST_QUANTUM)
                if _cached(entry.usage):
                    entry_saved = found.saving.quantize(COST_QUANTUM)
        elif entry_cost is None and price is not None:
            entry_cost = price(entry.model, entry.usage)
        missing = int(entry_cost is None)
        saved = _add(saved, entry_saved)
        total = total.plus(entry.usage)
        cost = _add(cost, entry_cost)
        run = runs.get(entry.run_id)
        if run is None:
            run = runs[entry.run_id] = RunCost(entry.run_id, 0, TokenUsage(), None)
        run.entries += 1
        run.unpriced += missing
        run.usage = run.usage.plus(entry.usage)
        run.cost_usd = _add(run.cost_usd, entry_cost)
        run.saved_usd = _add(run.saved_usd, entry_saved)
        per_run = run_models.get((entry.run_id, name))
        if per_run is None:
            per_run = run_models[(entry.run_id, name)] = ModelCost(name, 1, TokenUsage(), None)
            run.by_model.append(per_run)
        per_run.usage = per_run.usage.plus(entry.usage)
        per_run.unpriced += missing
        per_run.cost_usd = _add(per_run.cost_usd, entry_cost)
        per_run.saved_usd = _add(per_run.saved_usd, entry_saved)
        overall = models.get(name)
        if overall is None:
            overall = models[name] = ModelCost(name, 0, TokenUsage(), None)
        model_runs.setdefault(name, set()).add(entry.run_id)
        overall.runs = len(model_runs[name])
        overall.usage = overall.usage.plus(entry.usage)
        overall.unpriced += missing
        overall.cost_usd = _add(overall.cost_usd, entry_cost)
        overall.saved_usd = _add(overall.saved_usd, entry_saved)
    return CostReport(
        database=database,
        run_count=len(runs),
        total=total,
        cost_usd=cost,
        runs=list(runs.values()),
        models=sorted(models.values(), key=lambda m: m.model),
        saved_usd=saved,
    )


def aggregate_costs(
    database: Path | str, *, price: Pricer | None = None, book: PriceBook | None = None
) -> CostReport:
    """Read every ledger entry in ``database`` and aggregate them (see :func:`build_report`)."""
    path = Path(database)
    if not path.exists():
        raise StorageError(
            f"no database at {path}: run something with a ledger first, or pass -d PATH"
        )
    with TokenLedger(path) as ledger:
        entries = ledger.entries()
    return build_report(str(path), entries, price=price, book=book)


def pricer(
    budget: Mapping[str, Any],
    environ: Mapping[str, str],
    manager: Any = None,
    *,
    pricing: Mapping[str, Any] | None = None,
) -> Pricer:
    """Price a row with the configuration's price book (:func:`avo.pricing.price_book`):
    ``[pricing]`` by model name, then ``[budget]`` rates or ``AVO_USAGE_RATES_*``, then the
    provider plugins' catalogs. A ledger row names no provider, so the model name decides."""
    from avo.pricing import COST_QUANTUM, price_book

    book = price_book(pricing=pricing, budget=budget, environ=environ, manager=manager)

    def price(model: str | None, usage: TokenUsage) -> Decimal | None:
        cost = book.cost(None, model, usage)
        return None if cost is None else cost.total.quantize(COST_QUANTUM)

    return price


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo cost`` arguments."""
    parser.add_argument(
        "-d",
        "--database",
        default=None,
        metavar="PATH",
        help="the avo database holding the ledger (default: the configured store: "
        f"-d, {DATABASE_ENV}, avo.toml [store] location, avo.db)",
    )
    parser.add_argument(
        "--config", "-c", default=None, metavar="FILE", help="avo.toml to read [store] and [budget]"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--events",
        action="store_true",
        help="price every stored run from its events (provider, model, cache and reasoning "
        "tokens; [pricing] overrides, then the provider catalogs), no ledger needed",
    )


def _ledger_file(location: str, source: str) -> Path:
    """The SQLite file holding the ledger for the event store at ``location``."""
    if location.startswith("sqlite:///"):
        location = location.removeprefix("sqlite:///")
    elif "://" in location:
        raise StorageError(
            f"the event store {location} (from {source}) is not a SQLite file; the token ledger "
            "lives in one: pass -d LEDGER.db (the ledger hook's database setting)"
        )
    return Path(location).expanduser()


def run(args: argparse.Namespace, *, stdout: Any = None) -> int:
    """Print the cost report for the resolved store; 0 on success."""
    from avo.compose import resolve_config

    environ: Mapping[str, str] = getattr(args, "avo_environ", None) or os.environ
    resolved = resolve_config(
        getattr(args, "config", None),
        environ=environ,
        database=str(args.database) if args.database is not None else None,
    )
    if getattr(args, "events", False):
        return _events_report(args, resolved, stdout or sys.stdout)
    from avo.pricing import price_book

    out = stdout or sys.stdout
    try:
        database = _ledger_file(resolved.store_location, resolved.source("store.location"))
        bring_up_to_date(database)
    except StorageError:
        # Another kind of store (PostgreSQL): the ledger hook wrote its rows to the
        # default SQLite file; without one, the store's own events are priced.
        from avo.config import database_location

        database = Path(database_location(resolved.environ))
        if not database.exists():
            print(
                f"avo cost: the event store {resolved.store_location} is not a SQLite file and "
                f"there is no token ledger at {database}; pricing the store's runs from their "
                "events (avo cost --events)",
                file=sys.stderr,
            )
            return _events_report(args, resolved, out)
    book = price_book(
        pricing=getattr(resolved.config, "pricing", None),
        budget=resolved.config.budget,
        environ=resolved.environ,
        manager=getattr(args, "avo_plugins", None),
    )
    report = aggregate_costs(database, book=book)
    out.write(report.to_json() + "\n" if args.json else report.to_text())
    return 0


def _events_report(args: argparse.Namespace, resolved: Any, out: Any) -> int:
    """``avo cost --events``: see :mod:`avo_ledger.event_cost`."""
    import asyncio
    import inspect

    from avo.compose import open_store
    from avo.pricing import price_book
    from avo_ledger.event_cost import price_store, summary, to_text

    book = price_book(
        pricing=getattr(resolved.config, "pricing", None),
        budget=resolved.config.budget,
        environ=resolved.environ,
        manager=getattr(args, "avo_plugins", None),
    )

    # the configured store's settings (a PostgreSQL schema, ...) go with its own location
    table = resolved.config.store
    if resolved.source("store.location").startswith("flag"):
        table = None

    async def collect() -> list[Any]:
        store = open_store(
            resolved.store_location,
            manager=getattr(args, "avo_plugins", None),
            name=table.name if table is not None else None,
            settings=table.settings if table is not None else None,
            environ=resolved.environ,
        )
        if inspect.isawaitable(store):
            store = await store
        try:
            return await price_store(store, book)
        finally:
            await store.close()

    rows = asyncio.run(collect())
    if args.json:
        body = {"runs": [row.as_json() for row in rows], "total": summary(rows)}
        out.write(json.dumps(body, indent=2, sort_keys=True) + "\n")
    else:
        out.write(to_text(rows))
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
    "pricer",
    "configure",
    "main",
    "report_to_dict",
    "run",
]
