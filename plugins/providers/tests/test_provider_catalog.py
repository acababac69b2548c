"""The model catalog: per-model capabilities and prices, and Ollama's models from its server."""

from __future__ import annotations

from decimal import Decimal

from avo.cli.models import catalog
from avo.plugins.manager import PluginManager
from avo.pricing import FREE, price_book
from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse
from avo_providers.catalog import model_capabilities
from avo_providers.model_info import MODEL_INFO, model_info


def test_model_capabilities_narrow_the_providers() -> None:
    assert model_capabilities("openai", "gpt-4o").vision is True
    assert model_capabilities("openai", "o3-mini").vision is False  # the model, not the API
    assert model_capabilities("openai-compatible", "o3-mini").documents == ()
    assert model_capabilities("anthropic", "claude-3-opus").documents == ()
    assert model_capabilities("anthropic", "claude-sonnet-4-5-20250929").thinking is True
    unknown = model_capabilities("openai", "some-new-model")
    assert unknown.vision is True and unknown.documents == ("application/pdf",)


def test_every_catalog_price_is_dated_and_anthropic_cache_prices_follow_the_rule() -> None:
    for provider, models in MODEL_INFO.items():
        for name, info in models.items():
            if info.prices is not None:
                assert info.prices.checked, (provider, name)
    haiku = model_info("anthropic", "claude-3-5-haiku")
    assert haiku is not None and haiku.prices is not None
    assert (haiku.prices.cache_read, haiku.prices.cache_write) == (
        Decimal("0.08"),
        Decimal("1"),
    )


def test_price_book_prices_from_the_plugin_catalog_and_ollama_is_free() -> None:
    book = price_book(environ={}, manager=PluginManager(environ={}))
    found, source = book.lookup("anthropic", "claude-haiku-4-5")
    assert source == "catalog" and found is not None and found.cache_write == Decimal("1.25")
    assert book.lookup("ollama", "anything-pulled")[0] == FREE
    assert book.lookup("groq", "mixtral-8x7b-32768") == (None, "unknown")


def test_avo_models_rows_say_unknown_explicitly() -> None:
    rows = {row["model"]: row for row in catalog(PluginManager(environ={}), "groq")}
    mixtral = rows["mixtral-8x7b-32768"]
    assert mixtral["input_usd_per_million"] is None
    assert mixtral["capabilities"] == ["tools"]
    assert mixtral["max_output_tokens"] is None
    gpt = {r["model"]: r for r in catalog(PluginManager(environ={}), "openai")}["gpt-4o-mini"]
    assert gpt["cache_read_usd_per_million"] == "0.075"
    assert gpt["cache_write_usd_per_million"] is None
    assert gpt["prices_checked"] == "2025-11"


async def test_ollama_lists_the_models_its_server_has() -> None:
    tags = {"models": [{"name": "llava:latest"}, {"name": "qwen3:8b"}]}
    llava = {"capabilities": ["completion", "vision"], "model_info": {"llama.context_length": 4096}}
    qwen = {"capabilities": ["completion", "tools", "thinking"], "model_info": {}}
    script = [ScriptedResponse.json(body) for body in (tags, llava, qwen)]
    async with ScriptedHTTPServer(script) as server:
        rows = catalog(PluginManager(environ={}), "ollama", {"AVO_OLLAMA_BASE_URL": server.url})
    assert [r.path for r in server.requests] == ["/api/tags", "/api/show", "/api/show"]
    by_name = {row["model"]: row for row in rows}
    assert set(by_name) == {"llava:latest", "qwen3:8b"}
    assert by_name["llava:latest"]["capabilities"] == ["vision"]
    assert by_name["llava:latest"]["context_window"] == 4096
    assert by_name["qwen3:8b"]["capabilities"] == ["tools", "thinking"]
    assert by_name["qwen3:8b"]["source"] == "server"
    assert by_name["qwen3:8b"]["input_usd_per_million"] == "0"


def test_an_unreachable_ollama_is_a_row_naming_the_url() -> None:
    from avo.testing.providers import unused_loopback_url

    url = unused_loopback_url()
    rows = catalog(PluginManager(environ={}), "ollama", {"AVO_OLLAMA_BASE_URL": url})
    problem = rows[0]["problem"]
    assert problem.startswith(f"cannot list Ollama models at {url}: ConnectError")
    assert problem.endswith("start Ollama (ollama serve) or set AVO_OLLAMA_BASE_URL")
    assert len(rows) > 1  # the catalog's own models still listed


def test_a_router_accepts_only_what_every_route_accepts() -> None:
    from avo_providers.base_http import ProviderConfig
    from avo_providers.gemini import GeminiProvider
    from avo_providers.openai_compatible import OpenAICompatibleProvider
    from avo_providers.openai_vendors import GroqProvider
    from avo_providers.router import FallbackRouterProvider

    def cfg(model: str) -> ProviderConfig:
        return ProviderConfig(model=model, api_key="k", base_url="http://127.0.0.1:9")

    vision = FallbackRouterProvider(
        [
            ("openai", OpenAICompatibleProvider(cfg("gpt-4o"))),
            ("gemini", GeminiProvider(cfg("gemini-2.5-flash"))),
        ]
    )
    caps = vision.capabilities
    assert caps.vision is True and caps.documents == ("application/pdf",)
    assert caps.image_urls is False  # Gemini takes image bytes only
    assert caps.context_window == 128_000
    mixed = FallbackRouterProvider(
        [
            ("openai", OpenAICompatibleProvider(cfg("gpt-4o"))),
            ("groq", GroqProvider(cfg("llama-3.1-8b-instant"))),
        ]
    )
    assert mixed.capabilities.vision is False and mixed.capabilities.documents == ()
