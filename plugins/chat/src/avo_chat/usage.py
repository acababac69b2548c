"""Tokens, cost and context fill of a chat session, read from its runs' events.

Every model call's usage is in its MODEL_RESPONDED event (provider, model,
input and output tokens), so ``/cost`` agrees with ``avo cost`` and the web
UI. Prices come from ``[budget] input_per_1k / output_per_1k``, then the
``AVO_USAGE_RATES*`` variables, then the provider plugin's price list; a
model nobody prices is shown as such, never as free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from avo.events import AgentEvent, EventType
from avo.models import TokenUsage


@dataclass
class ModelUsage:
    """Usage of one provider/model in the session."""

    provider: str
    model: str
    calls: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: Decimal | None = None
    priced: bool = True


@dataclass
class SessionUsage:
    """Totals by provider and model; ``last_input`` is the newest call's prompt size."""

    models: dict[tuple[str, str], ModelUsage] = field(default_factory=dict)
    last_input: int = 0
    runs: set[str] = field(default_factory=set)

    def add(self, event: AgentEvent) -> bool:
        """Count a MODEL_RESPONDED event (other events are ignored); True when counted."""
        if event.event_type is not EventType.MODEL_RESPONDED:
            return False
        payload = event.payload
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            return False
        key = (str(payload.get("provider") or "?"), str(payload.get("model") or "?"))
        entry = self.models.setdefault(key, ModelUsage(*key))
        entry.calls += 1
        entry.usage = entry.usage.plus(
            TokenUsage(
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
            )
        )
        self.last_input = int(usage.get("input_tokens") or 0) or self.last_input
        self.runs.add(event.run_id)
        return True

    def add_all(self, events: Iterable[AgentEvent]) -> None:
        """Count every MODEL_RESPONDED event of ``events``."""
        for event in events:
            self.add(event)

    @property
    def total(self) -> TokenUsage:
        """Tokens of every call."""
        total = TokenUsage()
        for entry in self.models.values():
            total = total.plus(entry.usage)
        return total

    def price(self, pricer: Pricer) -> Decimal | None:
        """Price every model (sets each entry's cost); the total of what could be priced."""
        total: Decimal | None = None
        for entry in self.models.values():
            entry.cost = pricer.cost(entry.provider, entry.model, entry.usage)
            entry.priced = entry.cost is not None or entry.usage.total_tokens == 0
            if entry.cost is not None:
                total = entry.cost if total is None else total + entry.cost
        return total

    @property
    def partial(self) -> bool:
        """True when some model with usage has no known price."""
        return any(not entry.priced for entry in self.models.values())


class Pricer:
    """Prices usage the way ``avo cost`` does: [budget], then environment, then plugin prices."""

    def __init__(self, budget: Mapping[str, Any], environ: Mapping[str, str], manager: Any):
        self.budget = budget
        self.environ = environ
        self.manager = manager
        self._plugin_prices: dict[str, Mapping[str, Any]] = {}

    def rates(self, provider: str, model: str) -> tuple[Decimal, Decimal] | None:
        """USD per 1k (input, output) tokens for ``model``, or None when unknown."""
        from avo.usage import rates_from_env

        if self.budget.get("input_per_1k") is not None or self.budget.get("output_per_1k"):
            return (
                Decimal(str(self.budget.get("input_per_1k") or 0)),
                Decimal(str(self.budget.get("output_per_1k") or 0)),
            )
        from_env = rates_from_env(self.environ)
        if from_env is not None:
            return from_env
        for pricing in (self._pricing(provider), self._catalog()):
            if model in pricing:
                rate_in, rate_out = pricing[model]
                return Decimal(rate_in), Decimal(rate_out)
        return None

    def _pricing(self, provider: str) -> Mapping[str, Any]:
        """The price list of the plugin named ``provider`` (empty when there is none)."""
        if provider not in self._plugin_prices:
            try:
                spec = self.manager.get("provider", provider)
                self._plugin_prices[provider] = dict(getattr(spec, "pricing", {}) or {})
            except Exception:  # a provider that is gone or broken prices nothing
                self._plugin_prices[provider] = {}
        return self._plugin_prices[provider]

    def _catalog(self) -> Mapping[str, Any]:
        """Every provider plugin's prices by model (a provider object may name itself
        differently from its plugin, e.g. ``openai-compatible`` for ``openai``)."""
        if "*" not in self._plugin_prices:
            merged: dict[str, Any] = {}
            for name in self.manager.names("provider"):
                for model, rates in self._pricing(name).items():
                    merged.setdefault(model, rates)
            self._plugin_prices["*"] = merged
        return self._plugin_prices["*"]

    def cost(self, provider: str, model: str, usage: TokenUsage) -> Decimal | None:
        """USD for ``usage`` of ``model`` (None: no price known)."""
        from avo.usage import estimate_cost

        if usage.total_tokens == 0:
            return Decimal(0)
        rates = self.rates(provider, model)
        return estimate_cost(usage, rates=rates) if rates is not None else None


def money(value: Decimal | None, partial: bool = False) -> str:
    """``$0.0123`` (``+`` when part of the usage has no price, ``?`` when none has)."""
    if value is None:
        return "$?"
    # small amounts keep their digits: $0.00045, not $0.0004
    small = f"{value:.6f}".rstrip("0").rstrip(".") or "0"
    text = f"${small}" if value < 1 else f"${value:.2f}"
    return text + ("+" if partial else "")


def fill(used: int, window: int | None) -> str:
    """``12% of 128k`` (or ``12.3k tokens`` when the window is unknown)."""
    if not used:
        return ""
    if not window:
        return f"{used / 1000:.1f}k tokens"
    size = f"{window // 1000}k" if window >= 1000 else str(window)
    return f"{min(100, round(100 * used / window))}% of {size}"


__all__ = ["ModelUsage", "Pricer", "SessionUsage", "fill", "money"]
