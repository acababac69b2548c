"""Write one TokenLedger row per model call, automatically, from the event stream.

:class:`LedgerPlugin` is a pluggy plugin: register it on the runtime's plugin
manager and every MODEL_RESPONDED event that carries usage becomes a
``ledger_entries`` row (run id, step, model, tokens, cost). No code in the
kernel loop; the ledger is the SQLite helper's :class:`avo_sqlite.TokenLedger`.

Rates (USD per 1k input/output tokens) come from, in order: the
``AVO_USAGE_RATES_*`` environment variables; the ``pricing`` table given
(usually the provider plugin's ``ProviderSpec.pricing``, see
:func:`pricing_from_plugins`); else the cost is left unknown (``None``).
Given a price book (:func:`avo.pricing.price_book`, as the ``ledger`` hook
does), a call is priced by it first: by the provider and model that answered,
with cache reads and writes at their own prices.

Each row also keeps the call's cache-read, cache-write and reasoning tokens,
the provider that answered, and the event's id and sequence: one row per event,
so a notification delivered twice counts once. A notification that never came
(the process died between the store write and this observer) is made up for
by :func:`avo_ledger.sync.catch_up`, which ``avo cost`` runs first.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avo.events import AgentEvent, EventType
from avo.hookspecs import hookimpl
from avo.models import TokenUsage
from avo.usage import Rates, estimate_cost, resolve_rates
from avo_sqlite import EventUsage, LedgerEntry, TokenLedger

if TYPE_CHECKING:
    from avo.pricing import PriceBook

_log = logging.getLogger("avo.ledger")


def pricing_from_plugins(manager: Any, *, providers: list[str] | None = None) -> dict[str, Rates]:
    """Merge the ``pricing`` tables of provider plugins (model name -> rates).

    ``providers`` limits it to those names; by default every provider the
    manager knows is loaded and asked. A provider that fails to load is skipped.
    """
    names = providers if providers is not None else list(manager.names("provider"))
    table: dict[str, Rates] = {}
    for name in names:
        try:
            spec = manager.get("provider", name)
        except Exception as exc:  # a broken provider plugin must not stop cost accounting
            _log.warning("no pricing from provider %r: %s", name, exc)
            continue
        for model, (rate_in, rate_out) in dict(getattr(spec, "pricing", {}) or {}).items():
            table.setdefault(str(model), (Decimal(rate_in), Decimal(rate_out)))
    return table


def event_usage(event: AgentEvent) -> EventUsage | None:
    """The ledger row ``event`` makes: a MODEL_RESPONDED event that reports usage (else None).

    The cost is left unknown; the caller prices it.
    """
    if event.event_type is not EventType.MODEL_RESPONDED:
        return None
    usage_raw = event.payload.get("usage")
    if not isinstance(usage_raw, dict):
        return None  # the provider reported no usage: nothing to account
    model_raw = event.payload.get("model")
    step_raw = event.payload.get("step")
    provider_raw = event.payload.get("provider")
    return EventUsage(
        event_id=event.event_id,
        sequence=event.sequence,
        step=step_raw if isinstance(step_raw, int) and step_raw >= 0 else 0,
        usage=TokenUsage.model_validate(usage_raw),
        model=str(model_raw) if model_raw else None,
        provider=str(provider_raw) if provider_raw else None,
    )


class LedgerPlugin:
    """Records MODEL_RESPONDED usage into a :class:`~avo_sqlite.TokenLedger`."""

    def __init__(
        self,
        ledger: TokenLedger | str | Path,
        *,
        pricing: Mapping[str, Rates] | None = None,
        rates: Rates | None = None,
        environ: Mapping[str, str] | None = None,
        book: PriceBook | None = None,
    ) -> None:
        self.ledger = ledger if isinstance(ledger, TokenLedger) else TokenLedger(ledger)
        self.pricing: Mapping[str, Rates] = pricing if pricing is not None else {}
        self.rates = rates
        self.environ = environ
        self.book = book
        self.recorded: list[LedgerEntry] = []
        """Entries written by this plugin instance, in order."""

    def rates_for(self, model: str | None) -> Rates | None:
        """The rates that price ``model``'s tokens (None when unknown)."""
        if self.rates is not None:
            return self.rates
        return resolve_rates(model, pricing=self.pricing, environ=self.environ)

    @hookimpl
    def avo_event_appended(self, event: AgentEvent) -> None:
        """Write a ledger row for a MODEL_RESPONDED event that reports usage (once per event)."""
        row = event_usage(event)
        if row is None:
            return
        cost = self.price(row.provider, row.model, row.usage)
        entry = self.ledger.record_event(event.run_id, replace(row, cost_usd=cost))
        if entry is not None:
            self.recorded.append(entry)

    def price(self, provider: str | None, model: str | None, usage: TokenUsage) -> Decimal | None:
        """The cost of one call: the price book (when given and no flat rates), else rates."""
        if self.book is not None and self.rates is None:
            from avo.pricing import COST_QUANTUM

            found = self.book.cost(provider, model, usage)
            if found is not None:
                return found.total.quantize(COST_QUANTUM)
        rates = self.rates_for(model)
        return estimate_cost(usage, rates=rates) if rates is not None else None

    def close(self) -> None:
        """Close the ledger's database connection."""
        self.ledger.close()


__all__ = ["LedgerPlugin", "event_usage", "pricing_from_plugins"]
