"""Entry-point objects: one ``ProviderSpec`` per provider, plus the ``doctor`` command.

Importing this module is cheap: specs hold factories that import httpx and the
adapter modules only when called.
"""

from __future__ import annotations

from typing import Any

from avo.plugins import ProviderSpec, lazy_command, provides
from avo_providers import config
from avo_providers.catalog import (
    CAPABILITIES,
    CONTEXT_WINDOWS,
    OLLAMA_CLOUD_MODELS,
    PRICING,
    PROVIDER_MODELS,
    env_vars,
)
from avo_providers.model_info import MODEL_INFO
from avo_providers.settings import (
    HTTPProviderSettings,
    MiniMaxSettings,
    OpenAIResponsesSettings,
    RouterSettings,
)

_SETTINGS = {"minimax": MiniMaxSettings, "openai-responses": OpenAIResponsesSettings}


def _spec(name: str, factory: Any, description: str, *extra_env: str) -> ProviderSpec:
    models = OLLAMA_CLOUD_MODELS if name == "ollama-cloud" else PROVIDER_MODELS[name]
    return ProviderSpec(
        name=name,
        factory=factory,
        description=description,
        settings_model=_SETTINGS.get(name, HTTPProviderSettings),
        env_vars=env_vars(name, *extra_env),
        models=models,
        capabilities=CAPABILITIES[name],
        pricing=PRICING.get(name, {}),
        context_windows=CONTEXT_WINDOWS.get(name, {}),
        catalog=MODEL_INFO.get(name, {}),
        local=name == "ollama",
        list_models=list_ollama_models if name == "ollama" else None,
    )


def list_ollama_models(settings: Any, *, environ: Any) -> Any:
    """The models the local Ollama server has pulled (``GET /api/tags``)."""
    from avo_providers.ollama import list_local_models

    return list_local_models(settings, environ=environ)


PROVIDER_SPECS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        _spec("anthropic", config.make_anthropic, "Anthropic Messages API"),
        _spec("openai", config.make_openai, "Any OpenAI Chat Completions compatible server"),
        _spec(
            "openai-responses",
            config.make_openai_responses,
            "OpenAI Responses API (/v1/responses), stateless, reasoning kept",
            "AVO_OPENAI_TOOL_CHOICE",
            "AVO_OPENAI_REASONING_EFFORT",
            "AVO_OPENAI_REASONING_SUMMARY",
        ),
        _spec("ollama", config.make_ollama, "A local Ollama server (/api/chat)"),
        _spec("ollama-cloud", config.make_ollama_cloud, "Ollama Cloud (https://ollama.com)"),
        _spec("groq", config.make_groq, "Groq (OpenAI-compatible)"),
        _spec("cerebras", config.make_cerebras, "Cerebras Inference (OpenAI-compatible)"),
        _spec(
            "openrouter",
            config.make_openrouter,
            "OpenRouter (OpenAI-compatible)",
            "AVO_OPENROUTER_SITE_URL",
            "AVO_OPENROUTER_APP_NAME",
        ),
        _spec("gemini", config.make_gemini, "Google Gemini API"),
        _spec(
            "minimax",
            config.make_minimax,
            "MiniMax (OpenAI or Anthropic API style)",
            "AVO_MINIMAX_API_STYLE",
        ),
        ProviderSpec(
            name="router",
            factory=config.make_router,
            description="Fallback / race router over other providers",
            settings_model=RouterSettings,
            env_vars=(
                "AVO_ROUTER_CHAIN",
                "AVO_ROUTER_PROVIDERS",
                "AVO_ROUTER_MODELS",
                "AVO_ROUTER_MODE",
                "AVO_ROUTER_STRATEGY",
                "AVO_ROUTER_COOLDOWN_SECONDS",
                "AVO_ROUTER_SPECULATIVE_DELAY_MS",
            ),
            models=PROVIDER_MODELS["router"],
            capabilities=CAPABILITIES["router"],
        ),
    )
}

anthropic = provides(PROVIDER_SPECS["anthropic"])
openai = provides(PROVIDER_SPECS["openai"])
openai_responses = provides(PROVIDER_SPECS["openai-responses"])
ollama = provides(PROVIDER_SPECS["ollama"])
ollama_cloud = provides(PROVIDER_SPECS["ollama-cloud"])
groq = provides(PROVIDER_SPECS["groq"])
cerebras = provides(PROVIDER_SPECS["cerebras"])
openrouter = provides(PROVIDER_SPECS["openrouter"])
gemini = provides(PROVIDER_SPECS["gemini"])
minimax = provides(PROVIDER_SPECS["minimax"])
router = provides(PROVIDER_SPECS["router"])


doctor = provides(
    lazy_command(
        "doctor",
        "avo_providers.doctor",
        help="show the configured model provider and whether it is usable",
    )
)

__all__ = [
    "PROVIDER_SPECS",
    "anthropic",
    "cerebras",
    "doctor",
    "gemini",
    "groq",
    "minimax",
    "ollama",
    "ollama_cloud",
    "openai",
    "openai_responses",
    "openrouter",
    "router",
]
