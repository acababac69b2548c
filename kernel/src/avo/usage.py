"""Token usage tracking and cost estimation.

Rates are USD per 1,000 tokens as an ``(input, output)`` pair of
:class:`~decimal.Decimal`. The kernel keeps no pricing table: rates come from
the caller, from a provider plugin's ``ProviderSpec.pricing``, or from the
environment::

    AVO_USAGE_RATES_INPUT_PER_1K=0.003
    AVO_USAGE_RATES_OUTPUT_PER_1K=0.015
    # or, as one pair:
    AVO_USAGE_RATES=0.003,0.015

Costs are quantized to ``0.000001`` USD; :func:`estimate_cost` returns ``None``
when no rate is known (both rates zero), so "free" and "unknown" never blur.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from avo.exceptions import ConfigError
from avo.models import TokenUsage

Rates = tuple[Decimal, Decimal]
"""USD per 1k tokens: (input, output)."""

RATE_INPUT_ENV = "AVO_USAGE_RATES_INPUT_PER_1K"
RATE_OUTPUT_ENV = "AVO_USAGE_RATES_OUTPUT_PER_1K"
RATE_PAIR_ENV = "AVO_USAGE_RATES"
COST_QUANTUM = Decimal("0.000001")
_THOUSAND = Decimal(1000)


def _parse_rate(name: str, raw: str) -> Decimal:
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        raise ConfigError(
            f"{name}={raw!r} is not a number; set it to USD per 1k tokens, e.g. 0.003",
            key=name,
        ) from None
    if not value.is_finite() or value < 0:
        raise ConfigError(
            f"{name}={raw!r} must be a finite, non-negative USD per 1k tokens", key=name
        )
    return value


def rates_from_env(environ: Mapping[str, str] | None = None) -> Rates | None:
    """The ``(input, output)`` rates the environment sets, or ``None`` when it sets none.

    ``AVO_USAGE_RATES_INPUT_PER_1K`` / ``_OUTPUT_PER_1K`` win over the
    ``AVO_USAGE_RATES="in,out"`` pair form. A malformed value is a ConfigError.
    """
    env = os.environ if environ is None else environ
    raw_in, raw_out = env.get(RATE_INPUT_ENV), env.get(RATE_OUTPUT_ENV)
    if raw_in is not None or raw_out is not None:
        return (
            _parse_rate(RATE_INPUT_ENV, raw_in) if raw_in else Decimal(0),
            _parse_rate(RATE_OUTPUT_ENV, raw_out) if raw_out else Decimal(0),
        )
    pair = env.get(RATE_PAIR_ENV)
    if pair:
        parts = [p for p in pair.replace(";", ",").split(",") if p.strip()]
        if len(parts) != 2:
            raise ConfigError(
                f"{RATE_PAIR_ENV}={pair!r} must be 'INPUT_PER_1K,OUTPUT_PER_1K', e.g. 0.003,0.015",
                key=RATE_PAIR_ENV,
            )
        return _parse_rate(RATE_PAIR_ENV, parts[0]), _parse_rate(RATE_PAIR_ENV, parts[1])
    return None


def resolve_rates(
    model: str | None = None,
    *,
    pricing: Mapping[str, Rates] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Rates | None:
    """Rates for ``model``: the environment's override first, else ``pricing[model]``.

    ``pricing`` is a provider plugin's ``ProviderSpec.pricing`` (model -> rates).
    """
    from_env = rates_from_env(environ)
    if from_env is not None:
        return from_env
    if pricing and model is not None and model in pricing:
        rate_in, rate_out = pricing[model]
        return Decimal(rate_in), Decimal(rate_out)
    return None


def estimate_cost(
    usage: TokenUsage,
    *,
    rates: Rates | None = None,
    environ: Mapping[str, str] | None = None,
) -> Decimal | None:
    """USD cost of ``usage`` at ``rates`` (default: from the environment).

    Quantized to ``0.000001``; ``None`` when both rates are zero or unknown.
    """
    if rates is None:
        rates = rates_from_env(environ)
    if rates is None:
        return None
    rate_in, rate_out = Decimal(rates[0]), Decimal(rates[1])
    if rate_in == 0 and rate_out == 0:
        return None
    cost = (Decimal(usage.input_tokens) * rate_in + Decimal(usage.output_tokens) * rate_out) / (
        _THOUSAND
    )
    return cost.quantize(COST_QUANTUM)


@dataclass(frozen=True)
class UsageRecord:
    """The usage of one model call (one step of one run)."""

    step: int
    run_id: str
    usage: TokenUsage
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "step": self.step,
            "run_id": self.run_id,
            "model": self.model,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "total_tokens": self.usage.total_tokens,
        }


def merge(records: Iterable[UsageRecord | TokenUsage]) -> TokenUsage:
    """Sum the usage of ``records`` (UsageRecords or bare TokenUsage values)."""
    total = TokenUsage()
    for record in records:
        total = total.plus(record.usage if isinstance(record, UsageRecord) else record)
    return total


class UsageTracker:
    """Collects per-step usage in memory; totals, per-model split and cost."""

    def __init__(self, *, environ: Mapping[str, str] | None = None) -> None:
        self._records: list[UsageRecord] = []
        self._environ = environ

    def record(
        self, run_id: str, *, step: int, usage: TokenUsage, model: str | None = None
    ) -> UsageRecord:
        """Record one step's usage and return the stored record."""
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        entry = UsageRecord(step=step, run_id=run_id, usage=usage, model=model)
        self._records.append(entry)
        return entry

    @property
    def records(self) -> tuple[UsageRecord, ...]:
        """Every record, in recording order."""
        return tuple(self._records)

    def total(self, run_id: str | None = None) -> TokenUsage:
        """Summed usage (of one run when ``run_id`` is given)."""
        return merge(r for r in self._records if run_id is None or r.run_id == run_id)

    def by_model(self) -> dict[str | None, TokenUsage]:
        """Summed usage per model (``None`` for calls whose model is unknown)."""
        out: dict[str | None, TokenUsage] = {}
        for record in self._records:
            out[record.model] = out.get(record.model, TokenUsage()).plus(record.usage)
        return out

    def cost_total(
        self,
        *,
        rates: Rates | None = None,
        pricing: Mapping[str, Rates] | None = None,
    ) -> Decimal | None:
        """Total USD cost; per-model ``pricing`` applies when no flat ``rates`` are given.

        ``None`` when no record has a known rate.
        """
        total: Decimal | None = None
        for model, usage in self.by_model().items():
            model_rates = rates or resolve_rates(model, pricing=pricing, environ=self._environ)
            cost = estimate_cost(usage, rates=model_rates) if model_rates else None
            if cost is not None:
                total = cost if total is None else total + cost
        return total

    def to_list(self) -> list[dict[str, Any]]:
        """Every record as a JSON-ready dict."""
        return [r.to_dict() for r in self._records]

    def reset(self) -> None:
        """Forget every record."""
        self._records.clear()


__all__ = [
    "COST_QUANTUM",
    "RATE_INPUT_ENV",
    "RATE_OUTPUT_ENV",
    "RATE_PAIR_ENV",
    "Rates",
    "UsageRecord",
    "UsageTracker",
    "estimate_cost",
    "merge",
    "rates_from_env",
    "resolve_rates",
]
