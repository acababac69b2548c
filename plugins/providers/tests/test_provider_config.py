"""Configuration from an injected environment, the plugin registration, and avo doctor."""

from __future__ import annotations

import io
import subprocess
import sys
from decimal import Decimal
from importlib.metadata import entry_points

import pytest

from avo.exceptions import ConfigError
from avo.models import TokenUsage
from avo.plugins import ProviderSpec
from avo_providers.anthropic import AnthropicProvider
from avo_providers.catalog import PROVIDER_MODELS
from avo_providers.config import build_provider_from_env
from avo_providers.doctor import doctor_report, run
from avo_providers.gemini import GeminiProvider
from avo_providers.minimax import MiniMaxProvider
from avo_providers.ollama import OllamaCloudProvider, OllamaProvider
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.openai_vendors import CerebrasProvider, GroqProvider, OpenRouterProvider
from avo_providers.plugin import PROVIDER_SPECS

KEYED = {
    "anthropic": ("AVO_ANTHROPIC_API_KEY", AnthropicProvider),
    "openai": ("AVO_OPENAI_API_KEY", OpenAICompatibleProvider),
    "groq": ("AVO_GROQ_API_KEY", GroqProvider),
    "cerebras": ("AVO_CEREBRAS_API_KEY", CerebrasProvider),
    "openrouter": ("AVO_OPENROUTER_API_KEY", OpenRouterProvider),
    "gemini": ("AVO_GEMINI_API_KEY", GeminiProvider),
    "minimax": ("AVO_MINIMAX_API_KEY", MiniMaxProvider),
}


@pytest.mark.parametrize("name", list(KEYED))
def test_missing_key_message_is_exact(name: str) -> None:
    var, _ = KEYED[name]
    with pytest.raises(ConfigError) as info:
        build_provider_from_env({"AVO_PROVIDER": name})
    assert str(info.value) == f"{var} is required when AVO_PROVIDER={name}"
    assert info.value.key == var


@pytest.mark.parametrize("name", list(KEYED))
def test_builds_each_provider_with_catalog_default_and_overrides(name: str) -> None:
    var, cls = KEYED[name]
    provider = build_provider_from_env(
        {"AVO_PROVIDER": name, var: "secret-123456"}, max_completion_tokens=77
    )
    assert isinstance(provider, cls)
    assert provider.model == PROVIDER_MODELS[name][0]
    assert provider.name == ("openai-compatible" if name == "openai" else name)
    prefix = f"AVO_{name.upper()}"
    provider = build_provider_from_env(
        {
            "AVO_PROVIDER": name,
            var: "secret-123456",
            "AVO_MODEL": "generic-model",
            f"{prefix}_BASE_URL": "http://127.0.0.1:9/x/",
        }
    )
    assert provider.model == "generic-model"
    assert provider.base_url == "http://127.0.0.1:9/x"
    provider = build_provider_from_env(
        {
            "AVO_PROVIDER": name,
            var: "secret-123456",
            "AVO_MODEL": "generic-model",
            f"{prefix}_MODEL": "specific-model",
        }
    )
    assert provider.model == "specific-model"


def test_ollama_needs_no_key_and_cloud_does() -> None:
    local = build_provider_from_env({"AVO_PROVIDER": "ollama"})
    assert isinstance(local, OllamaProvider)
    assert local.base_url == "http://localhost:11434"
    assert local.api_key_configured is False
    with pytest.raises(ConfigError, match="AVO_OLLAMA_CLOUD_API_KEY is required"):
        build_provider_from_env({"AVO_PROVIDER": "ollama-cloud"})
    cloud = build_provider_from_env(
        {"AVO_PROVIDER": "ollama-cloud", "AVO_OLLAMA_CLOUD_API_KEY": "cloud-123456"}
    )
    assert isinstance(cloud, OllamaCloudProvider)
    assert cloud.base_url == "https://ollama.com"
    assert cloud.model == "qwen3-coder:480b-cloud"


def test_openrouter_accepts_legacy_key_and_attribution_env() -> None:
    provider = build_provider_from_env(
        {
            "AVO_PROVIDER": "openrouter",
            "OPENROUTER_API_KEY": "or-123456",
            "AVO_OPENROUTER_SITE_URL": "https://example.test",
            "AVO_OPENROUTER_APP_NAME": "My App",
        }
    )
    headers = provider._all_headers()
    assert headers["authorization"] == "Bearer or-123456"
    assert headers["HTTP-Referer"] == "https://example.test"
    assert headers["X-Title"] == "My App"


def test_minimax_style_defaults_to_anthropic_and_is_validated() -> None:
    env = {"AVO_PROVIDER": "minimax", "AVO_MINIMAX_API_KEY": "mm-123456"}
    assert build_provider_from_env(env).api_style == "anthropic"
    openai_style = build_provider_from_env({**env, "AVO_MINIMAX_API_STYLE": "openai"})
    assert openai_style.endpoint(stream=False) == "https://api.minimax.io/v1/chat/completions"
    with pytest.raises(ConfigError, match="AVO_MINIMAX_API_STYLE must be 'openai' or 'anthropic'"):
        build_provider_from_env({**env, "AVO_MINIMAX_API_STYLE": "grpc"})


def test_unknown_or_missing_provider_names_the_choices() -> None:
    with pytest.raises(
        ConfigError, match=r"AVO_PROVIDER is required; set it to one of .*anthropic"
    ):
        build_provider_from_env({})
    with pytest.raises(ConfigError, match="AVO_PROVIDER='nope' is not a known provider"):
        build_provider_from_env({"AVO_PROVIDER": "nope"})


def test_router_env_errors() -> None:
    base = {"AVO_PROVIDER": "router"}
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        build_provider_from_env({**base, "AVO_ROUTER_CHAIN": "ollama,nope"})
    with pytest.raises(ConfigError, match="AVO_ROUTER_COOLDOWN_SECONDS must be a number"):
        build_provider_from_env(
            {**base, "AVO_ROUTER_CHAIN": "ollama", "AVO_ROUTER_COOLDOWN_SECONDS": "soon"}
        )
    with pytest.raises(ConfigError) as info:
        build_provider_from_env({**base, "AVO_ROUTER_CHAIN": "ollama,groq"})
    assert str(info.value) == (
        "AVO_GROQ_API_KEY is required when AVO_PROVIDER=router routes through groq"
    )
    legacy = build_provider_from_env({**base, "AVO_ROUTER_PROVIDERS": "ollama"})
    assert [name for name, _ in legacy.routes] == ["ollama"]


def test_event_callback_reaches_the_router() -> None:
    seen: list[dict[str, object]] = []
    router = build_provider_from_env(
        {"AVO_PROVIDER": "router", "AVO_ROUTER_CHAIN": "ollama"}, event_callback=seen.append
    )
    assert router._event_callback == seen.append


# ------------------------------------------------------------ registration
def test_every_provider_has_its_own_entry_point_and_spec() -> None:
    registered = {ep.name: ep for ep in entry_points(group="avo.providers")}
    for name, spec in PROVIDER_SPECS.items():
        assert name in registered, name
        plugin = registered[name].load()
        assert [s.name for s in plugin.specs] == [name]
        assert isinstance(spec, ProviderSpec)
        assert spec.models
        assert spec.capabilities.streaming is True
    assert PROVIDER_SPECS["anthropic"].capabilities.prompt_caching is True
    assert "AVO_ANTHROPIC_API_KEY" in PROVIDER_SPECS["anthropic"].env_vars
    assert "AVO_MINIMAX_API_STYLE" in PROVIDER_SPECS["minimax"].env_vars
    assert PROVIDER_SPECS["anthropic"].pricing["claude-sonnet-4-5"] == (
        Decimal("0.003"),
        Decimal("0.015"),
    )
    doctor = {ep.name: ep for ep in entry_points(group="avo.commands")}["doctor"].load()
    assert [s.name for s in doctor.specs] == ["doctor"]


def test_entry_point_module_does_not_import_httpx() -> None:
    code = (
        "import sys, avo_providers.plugin, avo_providers.config\n"
        "assert 'httpx' not in sys.modules, 'httpx imported'\n"
        "assert 'avo_providers.anthropic' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------ doctor
def test_doctor_reports_configured_provider_without_the_key() -> None:
    key = "sk-ant-doctor-0123456789"
    lines, ok = doctor_report({"AVO_PROVIDER": "anthropic", "AVO_ANTHROPIC_API_KEY": key})
    assert ok
    assert lines[:2] == ["provider: anthropic", "model: claude-sonnet-4-5"]
    assert "base URL: https://api.anthropic.com" in lines
    assert "API style: anthropic" in lines
    assert "API key configured: yes" in lines
    assert key not in "\n".join(lines)


def test_doctor_prints_config_error_and_exits_1() -> None:
    out = io.StringIO()
    code = run(None, environ={"AVO_PROVIDER": "groq"}, out=out)
    text = out.getvalue().splitlines()
    assert code == 1
    assert "provider: groq" in text
    assert "API key configured: no" in text
    assert "API style: openai" in text
    assert "config error: AVO_GROQ_API_KEY is required when AVO_PROVIDER=groq" in text


def test_doctor_says_whether_the_native_accelerator_is_loaded() -> None:
    from avo import native

    out = io.StringIO()
    run(None, environ={"AVO_PROVIDER": "groq"}, out=out)
    last = out.getvalue().splitlines()[-1]
    assert last == f"native accelerator: {native.status().describe()}"
    assert last.startswith(("native accelerator: loaded (avo_native ", "native accelerator: not"))


def test_doctor_lists_router_routes() -> None:
    lines, ok = doctor_report(
        {
            "AVO_PROVIDER": "router",
            "AVO_ROUTER_CHAIN": "ollama,gemini",
            "AVO_GEMINI_API_KEY": "g1234",
        }
    )
    assert ok
    assert "model: router(ollama,gemini)" in lines
    assert any(line.startswith("route ollama: model=llama3.1") for line in lines)
    assert any("route gemini:" in line and "API key configured=yes" in line for line in lines)


# ------------------------------------------------------------ avo.toml composition
async def test_compose_builds_a_provider_from_avo_toml_settings(tmp_path) -> None:
    from avo.compose import compose
    from avo.state import RunState
    from avo.testing.providers import ScriptedHTTPServer
    from avo_providers.wire_fakes import OpenAIWire

    with ScriptedHTTPServer([OpenAIWire().text("composed", TokenUsage())]) as server:
        config = tmp_path / "avo.toml"
        config.write_text(
            "[provider]\n"
            'name = "openai"\n'
            "[provider.settings]\n"
            f'base_url = "{server.url}"\n'
            'model = "gpt-test"\n'
            "max_completion_tokens = 64\n"
        )
        env = {"AVO_OPENAI_API_KEY": "sk-compose-123456"}
        composition = compose(config, environ=env, store="memory")
        async with composition:
            result = await composition.runtime.run("hello")
    assert result.status is RunState.COMPLETED
    assert result.output == "composed"
    body = server.requests[0].json()
    assert body["model"] == "gpt-test"
    assert body["max_completion_tokens"] == 64


def test_settings_are_validated_with_the_plugin_settings_model() -> None:
    from pydantic import ValidationError

    model = PROVIDER_SPECS["openai"].settings_model
    assert model is not None
    with pytest.raises(ValidationError):
        model.model_validate({"max_completion_tokens": 0})
    with pytest.raises(ValidationError):
        model.model_validate({"temperature_typo": 1})
    minimax = PROVIDER_SPECS["minimax"].settings_model
    assert minimax is not None
    with pytest.raises(ValidationError):
        minimax.model_validate({"api_style": "grpc"})


def test_every_catalog_model_has_a_context_window_or_a_provider_wide_one() -> None:
    from avo.context_window import resolve_context_window
    from avo_providers.plugin import PROVIDER_SPECS

    for name, spec in PROVIDER_SPECS.items():
        if name in {"router", "ollama-cloud", "cerebras"}:
            continue  # routes over others, or no published per-model windows
        for model in spec.models:
            window = resolve_context_window(
                model=model,
                catalog=spec.context_windows,
                provider_window=spec.capabilities.context_window,
                environ={},
            )
            assert window.source == "catalog", (name, model)
            assert window.tokens >= 4_096, (name, model)
    openai = PROVIDER_SPECS["openai"]
    assert openai.context_windows["gpt-3.5-turbo"] == 16_385
