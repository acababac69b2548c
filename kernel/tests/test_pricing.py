"""Prices per model, the cost of a usage with prompt caching, and where prices come from."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from avo.exceptions import ConfigError
from avo.models import TokenUsage
from avo.plugins import ModelInfo, ProviderSpec
from avo.plugins.manager import PluginManager
from avo.pricing import (
    FREE,
    ModelPrices,
    PriceBook,
    catalog_from_plugins,
    cost_of,
    price_book,
    prices,
    pricing_from_settings,
    usd,
)

SONNET = prices("3", "15", "0.30", "3.75", checked="2025-11")


def test_a_cached_usage_is_priced_per_kind_of_token_by_hand() -> None:
    usage = TokenUsage(
        input_tokens=1_000_000,
        output_tokens=10_000,
        cache_read_tokens=600_000,
        cache_write_tokens=100_000,
        reasoning_tokens=2_000,
    )
    cost = cost_of(usage, SONNET)
    # 300k x 3 + 600k x 0.30 + 100k x 3.75 + 10k x 15, per million
    assert cost.total == Decimal("0.9") + Decimal("0.18") + Decimal("0.375") + Decimal("0.15")
    assert usd(cost.total) == "1.605000"
    # what the 700k cached tokens would have cost at 3/M, minus what they did cost
    assert cost.saving == Decimal("2.1") - Decimal("0.18") - Decimal("0.375")


def test_missing_cache_prices_fall_back_to_the_input_price() -> None:
    usage = TokenUsage(input_tokens=1000, output_tokens=0, cache_read_tokens=1000)
    cost = cost_of(usage, prices("2", "8"))
    assert cost.total == Decimal("0.002") and cost.saving == 0


def test_free_models_cost_zero_not_unknown() -> None:
    cost = cost_of(TokenUsage(input_tokens=10**6, output_tokens=10**6), FREE)
    assert cost.total == 0 and FREE.free
    assert usd(cost.total) == "0.000000" and usd(None) == "unknown"


def test_pricing_tables_from_avo_toml_are_checked() -> None:
    table = pricing_from_settings(
        {"openai/gpt-4o-mini": {"input": 0.15, "output": "0.6", "cache_read": 0.075}}
    )
    assert table["openai/gpt-4o-mini"] == ModelPrices(
        Decimal("0.15"), Decimal("0.6"), Decimal("0.075"), None, "avo.toml"
    )
    with pytest.raises(ConfigError, match=r"\[pricing.local\] needs output"):
        pricing_from_settings({"local": {"input": 1}})
    with pytest.raises(ConfigError, match=r"pricing.m.input = 'cheap' is not a number"):
        pricing_from_settings({"m": {"input": "cheap", "output": 1}})
    with pytest.raises(ConfigError, match=r"unknown keys \['per_1k'\]"):
        pricing_from_settings({"m": {"input": 1, "output": 1, "per_1k": 1}})
    with pytest.raises(ConfigError, match="must be a non-negative"):
        pricing_from_settings({"m": {"input": -1, "output": 1}})


def _manager(*specs: ProviderSpec) -> PluginManager:
    from avo.plugins import provides

    manager = PluginManager(autoload=False, environ={})
    for spec in specs:
        manager.register(provides(spec), spec.name)
    return manager


def _spec(name: str, **kwargs: Any) -> ProviderSpec:
    return ProviderSpec(name=name, factory=lambda settings, *, environ: None, **kwargs)


def test_the_book_looks_up_overrides_then_rates_then_catalogs() -> None:
    manager = _manager(
        _spec("cloud", catalog={"big": ModelInfo("big", prices=SONNET)}),
        _spec("local", local=True),
    )
    catalog = catalog_from_plugins(manager)
    book = PriceBook(
        overrides=pricing_from_settings({"big": {"input": 1, "output": 2}}), catalog=catalog
    )
    assert book.lookup("cloud", "big") == (prices(1, 2, checked="avo.toml"), "[pricing]")
    assert PriceBook(catalog=catalog).lookup("cloud", "big") == (SONNET, "catalog")
    # an adapter named differently from its plugin still finds the model
    assert PriceBook(catalog=catalog).lookup("cloud-compatible", "big") == (SONNET, "catalog")
    assert PriceBook(catalog=catalog).lookup("local", "anything") == (FREE, "catalog")
    assert PriceBook(catalog=catalog).lookup("cloud", "unlisted") == (None, "unknown")
    flat = PriceBook(flat=prices(1, 1), catalog=catalog)
    assert flat.lookup("cloud", "big")[1] == "rates"


def test_a_price_book_reads_budget_rates_and_the_environment() -> None:
    manager = _manager(_spec("cloud"))
    book = price_book(budget={"input_per_1k": "0.003", "output_per_1k": "0.015"}, manager=manager)
    assert book.lookup("x", "y")[0] == ModelPrices(
        Decimal("3.000"), Decimal("15.000"), checked="[budget]"
    )
    env = {"AVO_USAGE_RATES": "0.001,0.002"}
    assert price_book(environ=env, manager=manager).lookup("x", "y")[1] == "rates"
    assert price_book(manager=manager).lookup("x", "y") == (None, "unknown")
