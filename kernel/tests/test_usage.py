from decimal import Decimal

import pytest

from avo.exceptions import ConfigError
from avo.models import TokenUsage
from avo.usage import (
    UsageRecord,
    UsageTracker,
    estimate_cost,
    merge,
    rates_from_env,
    resolve_rates,
)

RATES = (Decimal("0.003"), Decimal("0.015"))


def test_estimate_cost_with_explicit_rates_is_quantized():
    cost = estimate_cost(TokenUsage(input_tokens=1234, output_tokens=567), rates=RATES)
    # 1234*0.003/1000 + 567*0.015/1000 = 0.003702 + 0.008505
    assert cost == Decimal("0.012207")
    assert cost.as_tuple().exponent == -6


def test_estimate_cost_reads_env_rates():
    env = {"AVO_USAGE_RATES_INPUT_PER_1K": "1", "AVO_USAGE_RATES_OUTPUT_PER_1K": "2"}
    assert estimate_cost(TokenUsage(input_tokens=1000, output_tokens=500), environ=env) == Decimal(
        "2.000000"
    )
    assert estimate_cost(TokenUsage(input_tokens=1000), environ={"AVO_USAGE_RATES": "0.5,1"}) == (
        Decimal("0.500000")
    )


def test_estimate_cost_none_when_rates_unknown_or_zero():
    usage = TokenUsage(input_tokens=10, output_tokens=10)
    assert estimate_cost(usage, environ={}) is None
    assert estimate_cost(usage, rates=(Decimal(0), Decimal(0))) is None


def test_bad_env_rates_name_the_variable():
    with pytest.raises(ConfigError, match="AVO_USAGE_RATES_INPUT_PER_1K"):
        rates_from_env({"AVO_USAGE_RATES_INPUT_PER_1K": "cheap"})
    with pytest.raises(ConfigError, match="AVO_USAGE_RATES"):
        rates_from_env({"AVO_USAGE_RATES": "0.1"})
    with pytest.raises(ConfigError, match="non-negative"):
        rates_from_env({"AVO_USAGE_RATES_OUTPUT_PER_1K": "-1"})


def test_resolve_rates_env_overrides_pricing_table():
    pricing = {"m1": (Decimal("0.1"), Decimal("0.2"))}
    assert resolve_rates("m1", pricing=pricing, environ={}) == (Decimal("0.1"), Decimal("0.2"))
    assert resolve_rates("m2", pricing=pricing, environ={}) is None
    assert resolve_rates("m1", pricing=pricing, environ={"AVO_USAGE_RATES": "1,1"}) == (
        Decimal(1),
        Decimal(1),
    )


def test_tracker_totals_by_model_cost_and_reset():
    tracker = UsageTracker(environ={})
    tracker.record("r1", step=1, usage=TokenUsage(input_tokens=100, output_tokens=10), model="a")
    tracker.record("r1", step=2, usage=TokenUsage(input_tokens=200, output_tokens=20), model="b")
    tracker.record("r2", step=1, usage=TokenUsage(input_tokens=1, output_tokens=1), model="a")
    assert tracker.total() == TokenUsage(input_tokens=301, output_tokens=31)
    assert tracker.total("r1") == TokenUsage(input_tokens=300, output_tokens=30)
    assert tracker.by_model() == {
        "a": TokenUsage(input_tokens=101, output_tokens=11),
        "b": TokenUsage(input_tokens=200, output_tokens=20),
    }
    pricing = {"a": (Decimal(1), Decimal(1))}
    assert tracker.cost_total(pricing=pricing) == Decimal("0.112000")  # only "a" is priced
    assert tracker.cost_total(rates=(Decimal(1), Decimal(0))) == Decimal("0.301000")
    assert tracker.cost_total() is None
    assert tracker.to_list()[0] == {
        "step": 1,
        "run_id": "r1",
        "model": "a",
        "input_tokens": 100,
        "output_tokens": 10,
        "total_tokens": 110,
    }
    tracker.reset()
    assert tracker.records == ()


def test_merge_accepts_records_and_usages():
    record = UsageRecord(step=1, run_id="r", usage=TokenUsage(input_tokens=3))
    assert merge([record, TokenUsage(output_tokens=4)]) == TokenUsage(
        input_tokens=3, output_tokens=4
    )
    assert merge([]) == TokenUsage()
