"""Dollar budgets for a run: a warning line and a hard limit.

Give a runtime ``AgentRuntime(budget=BudgetChecker(BudgetConfig(...), rates=...))``
and it calls :meth:`BudgetChecker.check` with the run's total usage after every
model response; a decision with ``exceeded_hard_limit`` stops the run
``STOPPED`` / ``TOKEN_BUDGET_EXCEEDED`` (a POLICY_TRIGGERED event with
``policy: "budget"``), never an exception. Cost math is
:func:`avo.usage.estimate_cost` for flat rates, else :func:`avo.pricing.cost_of`
at the model's prices (``prices=``: what ``avo cost`` charges, cache reads and
writes at their own prices; ``avo.compose`` passes the configured model's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from avo.exceptions import ConfigError
from avo.models import TokenUsage
from avo.usage import RATE_INPUT_ENV, RATE_OUTPUT_ENV, Rates, estimate_cost, rates_from_env

if TYPE_CHECKING:
    from avo.pricing import ModelPrices


@dataclass(frozen=True)
class BudgetConfig:
    """USD thresholds; ``None`` disables that threshold."""

    warning_usd: Decimal | None = None
    hard_limit_usd: Decimal | None = None

    def __post_init__(self) -> None:
        for name in ("warning_usd", "hard_limit_usd"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, Decimal):
                try:
                    value = Decimal(str(value))
                except ArithmeticError:
                    raise ConfigError(f"BudgetConfig.{name}={value!r} is not a number") from None
                object.__setattr__(self, name, value)
            if not value.is_finite() or value < 0:
                raise ConfigError(f"BudgetConfig.{name}={value!r} must be a non-negative amount")
        warn, hard = self.warning_usd, self.hard_limit_usd
        if warn is not None and hard is not None and warn > hard:
            raise ConfigError(
                f"BudgetConfig.warning_usd={warn} is above hard_limit_usd={hard}; "
                "the warning must come first"
            )


@dataclass(frozen=True)
class BudgetDecision:
    """What :meth:`BudgetChecker.check` decided for one total."""

    allowed: bool
    spent_usd: Decimal
    crossed_warning: bool
    exceeded_hard_limit: bool


class BudgetChecker:
    """Prices a run's total usage and compares it with a :class:`BudgetConfig`.

    ``rates`` are USD per 1k ``(input, output)`` tokens; without them the
    checker reads ``AVO_USAGE_RATES_*`` from ``environ``. A limit with no
    known rate is a :class:`~avo.exceptions.ConfigError` at construction, so a
    budget can never be silently unenforced.

    ``crossed_warning`` is true on every check at or above the warning line;
    :attr:`warned` records whether any check crossed it. The hard limit is
    reached when the spend is *at or above* it.
    """

    def __init__(
        self,
        config: BudgetConfig | None = None,
        *,
        rates: Rates | None = None,
        environ: Mapping[str, str] | None = None,
        prices: ModelPrices | None = None,
    ) -> None:
        self.config = config or BudgetConfig()
        self.rates = rates if rates is not None else rates_from_env(environ)
        # Per-million prices with cache read/write (avo.pricing, as `avo cost` charges);
        # flat rates, when given, win, as they do in the price book.
        self.prices = prices if self.rates is None else None
        has_limit = self.config.warning_usd is not None or self.config.hard_limit_usd is not None
        unpriced = self.rates is None or all(r == 0 for r in self.rates)
        if has_limit and unpriced and (self.prices is None or self.prices.free):
            raise ConfigError(
                'a budget needs prices for the model: add [pricing."provider/model"] to '
                "avo.toml, pass BudgetChecker(config, rates=(input_per_1k, output_per_1k)) or "
                f"set {RATE_INPUT_ENV} and {RATE_OUTPUT_ENV}"
            )
        self.warned = False
        self.last: BudgetDecision | None = None

    def spent(self, total: TokenUsage, *, rates: Rates | None = None) -> Decimal:
        """USD spent for ``total`` (zero when no rate is known)."""
        if rates is None and self.prices is not None:
            from avo.pricing import COST_QUANTUM, cost_of

            return cost_of(total, self.prices).total.quantize(COST_QUANTUM)
        cost = estimate_cost(total, rates=rates or self.rates or (Decimal(0), Decimal(0)))
        return cost if cost is not None else Decimal(0)

    def check(self, total: TokenUsage, *, rates: Rates | None = None) -> BudgetDecision:
        """Decide whether a run whose usage so far is ``total`` may continue."""
        spent = self.spent(total, rates=rates)
        warn, hard = self.config.warning_usd, self.config.hard_limit_usd
        crossed = warn is not None and spent >= warn
        exceeded = hard is not None and spent >= hard
        self.warned = self.warned or crossed
        decision = BudgetDecision(
            allowed=not exceeded,
            spent_usd=spent,
            crossed_warning=crossed,
            exceeded_hard_limit=exceeded,
        )
        self.last = decision
        return decision


_BUDGET_KEYS = ("hard_limit_usd", "input_per_1k", "output_per_1k", "warning_usd")


def budget_from_settings(
    settings: Mapping[str, object] | None,
    *,
    environ: Mapping[str, str] | None = None,
    prices: ModelPrices | None = None,
) -> BudgetChecker | None:
    """A checker from an ``avo.toml`` ``[budget]`` table, or None when it sets no limit.

    Keys: ``warning_usd``, ``hard_limit_usd``, and optional ``input_per_1k`` /
    ``output_per_1k`` rates (else ``AVO_USAGE_RATES_*`` from ``environ``).
    """
    table = dict(settings or {})
    unknown = sorted(set(table) - set(_BUDGET_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown [budget] keys {unknown}; allowed: {', '.join(_BUDGET_KEYS)}", key="budget"
        )

    def amount(key: str) -> Decimal | None:
        raw = table.get(key)
        if raw is None:
            return None
        try:
            return Decimal(str(raw))
        except ArithmeticError:
            raise ConfigError(
                f"[budget] {key}={raw!r} is not a number", key=f"budget.{key}"
            ) from None

    config = BudgetConfig(
        warning_usd=amount("warning_usd"), hard_limit_usd=amount("hard_limit_usd")
    )
    if config.warning_usd is None and config.hard_limit_usd is None:
        return None
    rate_in, rate_out = amount("input_per_1k"), amount("output_per_1k")
    rates = None
    if rate_in is not None or rate_out is not None:
        rates = (rate_in or Decimal(0), rate_out or Decimal(0))
    return BudgetChecker(config, rates=rates, environ=environ, prices=prices)


__all__ = ["BudgetChecker", "BudgetConfig", "BudgetDecision", "budget_from_settings"]
