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
    with pytest.raises(ConfigError, match="needs token rates"):
        budget_from_settings({"hard_limit_usd": 1}, environ={})
