from decimal import Decimal

import pytest

from avo.budget import BudgetChecker, BudgetConfig, BudgetDecision
from avo.concurrency import ConcurrencyError, ConcurrencyLimiter
from avo.exceptions import ConfigError
from avo.models import TokenUsage

RATES = (Decimal("1"), Decimal("2"))  # USD per 1k


def test_budget_decisions_cross_warning_then_hard_limit():
    checker = BudgetChecker(
        BudgetConfig(warning_usd=Decimal("0.5"), hard_limit_usd=Decimal("1")), rates=RATES
    )
    d = checker.check(TokenUsage(input_tokens=100, output_tokens=100))  # 0.1 + 0.2
    assert d == BudgetDecision(
        allowed=True, spent_usd=Decimal("0.3"), crossed_warning=False, exceeded_hard_limit=False
    )
    assert not checker.warned
    d = checker.check(TokenUsage(input_tokens=200, output_tokens=200))  # 0.6
    assert d.crossed_warning and d.allowed and not d.exceeded_hard_limit
    assert checker.warned
    d = checker.check(TokenUsage(input_tokens=400, output_tokens=300))  # exactly 1.0
    assert d.exceeded_hard_limit and not d.allowed
    assert checker.last is d


def test_budget_rates_from_env_and_per_check_override():
    env = {"AVO_USAGE_RATES_INPUT_PER_1K": "10", "AVO_USAGE_RATES_OUTPUT_PER_1K": "0"}
    checker = BudgetChecker(BudgetConfig(hard_limit_usd=Decimal("1")), environ=env)
    assert checker.check(TokenUsage(input_tokens=100)).exceeded_hard_limit
    d = checker.check(TokenUsage(input_tokens=100), rates=(Decimal("0.001"), Decimal(0)))
    assert d.allowed and d.spent_usd == Decimal("0.0001")


def test_budget_without_rates_is_a_config_error():
    with pytest.raises(ConfigError, match="AVO_USAGE_RATES_INPUT_PER_1K"):
        BudgetChecker(BudgetConfig(hard_limit_usd=Decimal("1")), environ={})
    # no limit -> no rates needed, and nothing is ever exceeded
    d = BudgetChecker(environ={}).check(TokenUsage(input_tokens=10**9))
    assert d.allowed and d.spent_usd == 0


def test_budget_config_validation():
    with pytest.raises(ConfigError, match="warning_usd"):
        BudgetConfig(warning_usd=Decimal("2"), hard_limit_usd=Decimal("1"))
    with pytest.raises(ConfigError, match="hard_limit_usd"):
        BudgetConfig(hard_limit_usd=Decimal("-1"))
    assert BudgetConfig(hard_limit_usd="0.25").hard_limit_usd == Decimal("0.25")  # type: ignore[arg-type]


async def test_concurrency_limiter_fails_fast_when_full():
    limiter = ConcurrencyLimiter(2)
    async with limiter.slot(), limiter.slot():
        assert limiter.active == 2 and limiter.available == 0
        with pytest.raises(ConcurrencyError, match="limit of 2"):
            await limiter.acquire()
    assert limiter.active == 0


async def test_concurrency_limiter_waits_and_times_out():
    import asyncio

    limiter = ConcurrencyLimiter(1, wait=True, timeout=0.05)
    await limiter.acquire()
    with pytest.raises(ConcurrencyError, match="waited"):
        await limiter.acquire()
    waiter = asyncio.create_task(ConcurrencyLimiter.acquire(limiter))
    await asyncio.sleep(0)
    limiter.release()
    await waiter
    assert limiter.active == 1
    limiter.release()
    with pytest.raises(ConcurrencyError, match="release"):
        limiter.release()


def test_concurrency_limiter_validation():
    with pytest.raises(ConcurrencyError, match="got 0"):
        ConcurrencyLimiter(0)


def test_budget_from_settings():
    from avo.budget import budget_from_settings

    assert budget_from_settings({}, environ={}) is None
    assert budget_from_settings(None, environ={}) is None
    checker = budget_from_settings(
        {"hard_limit_usd": 2, "warning_usd": "1.5", "input_per_1k": "1"}, environ={}
    )
    assert checker is not None
    assert checker.config.hard_limit_usd == Decimal(2)
    assert checker.rates == (Decimal(1), Decimal(0))
    env = {"AVO_USAGE_RATES": "0.5,0.5"}
    assert budget_from_settings({"hard_limit_usd": 1}, environ=env).rates == (
        Decimal("0.5"),
        Decimal("0.5"),
    )
    with pytest.raises(ConfigError, match="allowed: hard_limit_usd"):
        budget_from_settings({"limit": 1}, environ={})
    with pytest.raises(ConfigError, match="not a number"):
        budget_from_settings({"hard_limit_usd": "lots"}, environ={})
    with pytest.raises(ConfigError, match="needs prices for the model"):
        budget_from_settings({"hard_limit_usd": 1}, environ={})


def test_a_budget_charges_what_avo_cost_charges_cache_tokens_included():
    from avo.pricing import prices

    haiku = prices("1", "5", "0.1", "1.25")  # USD per million: in, out, cache read, write
    checker = BudgetChecker(BudgetConfig(hard_limit_usd=Decimal("0.0009")), prices=haiku)
    usage = TokenUsage(
        input_tokens=1250, output_tokens=100, cache_read_tokens=1000, cache_write_tokens=200
    )
    # 50 x 1 + 1000 x 0.1 + 200 x 1.25 + 100 x 5 = 900 per million
    decision = checker.check(usage)
    assert decision.spent_usd == Decimal("0.000900")
    assert decision.exceeded_hard_limit
    # flat rates, when given, win over the model's prices (as in the price book)
    flat = BudgetChecker(BudgetConfig(hard_limit_usd=Decimal(1)), rates=(Decimal(1), Decimal(0)))
    assert flat.check(usage).spent_usd == Decimal("1.250000")
    with pytest.raises(ConfigError, match="needs prices for the model"):
        BudgetChecker(BudgetConfig(hard_limit_usd=Decimal(1)), prices=prices(0, 0), environ={})


async def test_compose_prices_the_budget_from_pricing_overrides(tmp_path):
    from avo.compose import compose
    from avo.state import StopReason

    config = tmp_path / "avo.toml"
    config.write_text(
        '[provider]\nname = "fake"\n[[provider.settings.script]]\ncontent = "done"\n'
        "usage = {input_tokens = 1000, output_tokens = 1000, cache_read_tokens = 800}\n"
        '[budget]\nhard_limit_usd = "0.004"\n'
        '[pricing."fake/fake"]\ninput = "2"\noutput = "4"\ncache_read = "0.5"\n'
    )
    composition = compose(config, environ={}, database=str(tmp_path / "avo.db"))
    async with composition:
        result = await composition.runtime.run("x")
    # 200 x 2 + 800 x 0.5 + 1000 x 4 = 4800 per million = 0.0048 >= 0.004
    assert result.stop_reason is StopReason.TOKEN_BUDGET_EXCEEDED
