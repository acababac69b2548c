"""``avo cost --events``: every stored run priced call by call from its events.

Each model call a run recorded (its ``model_responded`` event: provider,
model and usage with cache and reasoning tokens) is priced with the
configuration's price book (:func:`avo.pricing.price_book`: ``[pricing]`` in
avo.toml, flat ``[budget]`` / ``AVO_USAGE_RATES*`` rates, then the provider
plugins' catalogs). Unlike the ledger report this needs no ledger hook, and it
prices cache reads and writes at their own prices: the saving column is what
prompt caching saved against plain input prices. A call nobody has a price
for leaves its run unpriced (or partly priced), and a total over such runs
says it is partial: the figure is then a lower bound, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

_ZERO = Decimal(0)


@dataclass
class EventRunCost:
    """The priced calls of one run."""

    run_id: str
    models: list[str] = field(default_factory=list)
    calls: int = 0
    unpriced_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost: Decimal = _ZERO
    saving: Decimal = _ZERO
    unpriced: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``priced``, ``partial`` (some calls unpriced), ``unpriced`` or ``no calls``."""
        if self.calls == 0:
            return "no calls"
        if self.unpriced_calls == 0:
            return "priced"
        return "unpriced" if self.unpriced_calls == self.calls else "partial"

    def as_json(self) -> dict[str, Any]:
        """The row as JSON (amounts as decimal strings, None when unpriced)."""
        from avo.pricing import usd

        priced = self.status in ("priced", "no calls")
        return {
            "run_id": self.run_id,
            "models": self.models,
            "calls": self.calls,
            "status": self.status,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cost_usd": usd(self.cost) if priced else None,
            "priced_cost_usd": usd(self.cost),
            "saving_usd": usd(self.saving),
            "unpriced": self.unpriced,
        }


def price_run(run_id: str, events: list[Any], book: Any) -> EventRunCost:
    """Price every model call ``events`` recorded."""
    from avo.events import EventType
    from avo.models import TokenUsage

    row = EventRunCost(run_id)
    for event in events:
        if event.event_type is not EventType.MODEL_RESPONDED:
            continue
        payload = event.payload
        provider, model = payload.get("provider"), payload.get("model")
        label = f"{provider}/{model}" if model else str(provider or "unknown")
        if label not in row.models:
            row.models.append(label)
        row.calls += 1
        raw = payload.get("usage")
        if not isinstance(raw, dict) or not payload.get("token_accounting_available", True):
            row.unpriced_calls += 1
            row.unpriced.append(f"{label}: no usage reported")
            continue
        usage = TokenUsage.model_validate(raw)
        row.input_tokens += usage.input_tokens
        row.output_tokens += usage.output_tokens
        row.cache_read_tokens += usage.cache_read_tokens
        row.cache_write_tokens += usage.cache_write_tokens
        row.reasoning_tokens += usage.reasoning_tokens
        cost = book.cost(provider, model, usage)
        if cost is None:
            row.unpriced_calls += 1
            reason = f'{label}: no price (add [pricing."{label}"] to avo.toml)'
            if reason not in row.unpriced:
                row.unpriced.append(reason)
            continue
        row.cost += cost.total
        row.saving += cost.saving
    return row


def summary(rows: list[EventRunCost]) -> dict[str, Any]:
    """The total over ``rows``; ``partial`` when any run is not fully priced."""
    from avo.pricing import usd

    incomplete = [row.run_id for row in rows if row.status in ("partial", "unpriced")]
    return {
        "runs": len(rows),
        "cost_usd": usd(sum((row.cost for row in rows), _ZERO)),
        "saving_usd": usd(sum((row.saving for row in rows), _ZERO)),
        "partial": bool(incomplete),
        "unpriced_runs": incomplete,
    }


async def price_store(store: Any, book: Any) -> list[EventRunCost]:
    """Price every run in ``store`` (oldest first) from its recorded model calls."""
    runs = sorted(await store.list_runs(), key=lambda run: run.created_at)
    return [price_run(run.run_id, list(await store.get_events(run.run_id)), book) for run in runs]


def to_text(rows: list[EventRunCost]) -> str:
    """A table per run (tokens, cached tokens, cost, cache saving) and the total."""
    from avo.pricing import usd

    total = summary(rows)
    lines = [
        f"{'RUN':<36}  {'INPUT':>9}  {'CACHED':>9}  {'OUTPUT':>9}  {'COST (USD)':>22}  "
        f"{'SAVED (USD)':>11}  MODELS"
    ]
    for row in rows:
        if row.status == "unpriced":
            cost = "unpriced"
        elif row.status == "partial":
            cost = f">= {usd(row.cost)} (partial)"
        else:
            cost = usd(row.cost)
        lines.append(
            f"{row.run_id:<36}  {row.input_tokens:>9}  {row.cache_read_tokens:>9}  "
            f"{row.output_tokens:>9}  {cost:>22}  {usd(row.saving):>11}  {', '.join(row.models)}"
        )
    line = f"Total: {total['cost_usd']} USD over {total['runs']} runs"
    line += f"; prompt caching saved {total['saving_usd']} USD"
    if total["partial"]:
        count = len(total["unpriced_runs"])
        line += (
            f"; partial: {count} run{'s' if count != 1 else ''} not fully priced "
            "(their unpriced calls are left out of the total)"
        )
    lines.append(line)
    for row in rows:
        lines.extend(f"  {row.run_id}: {reason}" for reason in row.unpriced)
    return "\n".join(lines) + "\n"


__all__ = ["EventRunCost", "price_run", "price_store", "summary", "to_text"]
