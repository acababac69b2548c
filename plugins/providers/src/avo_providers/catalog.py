"""Model catalogs, env variables, capabilities and prices of the shipped providers.

Pure data: importing this module is cheap (no httpx). Prices are USD per 1k
(input, output) tokens from the vendors' public price pages as of 2025-11;
they change, so treat costs computed from them as estimates. Local models
(Ollama) and OpenRouter ``:free`` models cost nothing.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from avo.plugins import ProviderCapabilities

ProviderName = Literal[
    "ollama",
    "minimax",
    "anthropic",
    "openai",
    "openai-responses",
    "groq",
    "cerebras",
    "openrouter",
    "gemini",
    "router",
]

PROVIDER_MODELS: dict[str, tuple[str, ...]] = {
    "ollama": (
        "llama3.1",
        "llama3.2",
        "qwen2.5-coder",
        "qwen2.5",
        "mistral",
        "mixtral",
        "codellama",
        "deepseek-coder-v2",
        "phi3",
        "gemma2",
        "command-r",
    ),
    "openai": (
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "o1",
        "o1-mini",
        "o1-preview",
        "o3-mini",
        "gpt-3.5-turbo",
    ),
    "openai-responses": (
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "o3",
        "o4-mini",
        "o3-mini",
        "o1",
    ),
    "anthropic": (
        "claude-sonnet-4-5",
        "claude-opus-4-5",
        "claude-haiku-4-5",
        "claude-3-5-sonnet",
        "claude-3-5-haiku",
        "claude-3-opus",
    ),
    "minimax": ("MiniMax-M2", "MiniMax-M3"),
    "groq": (
        "llama-3.3-70b-versatile",
        "llama-3.1-8b-instant",
        "mixtral-8x7b-32768",
        "gemma2-9b-it",
    ),
    "cerebras": ("llama-3.3-70b", "llama-3.1-8b", "qwen-2.5-32b"),
    "openrouter": (
        "meta-llama/llama-3.3-70b-instruct:free",
        "deepseek/deepseek-r1:free",
        "deepseek/deepseek-chat-v3-0324:free",
        "qwen/qwen-2.5-coder-32b-instruct:free",
        "google/gemini-2.0-flash-exp:free",
        "mistralai/mistral-7b-instruct:free",
        "microsoft/phi-3-mini-128k-instruct:free",
        "openai/gpt-4o-mini",
        "anthropic/claude-sonnet-4.5",
        "google/gemini-2.5-flash",
    ),
    "gemini": ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.0-flash"),
    "router": ("auto", "ollama,openrouter", "ollama,groq", "openrouter,anthropic"),
}
"""The curated catalog; the first entry is the default when no model is configured."""

OLLAMA_CLOUD_MODELS: tuple[str, ...] = (
    "qwen3-coder:480b-cloud",
    "gpt-oss:120b-cloud",
    "deepseek-v3.1:671b-cloud",
)

ANTHROPIC_ADAPTER_DEFAULT_MODEL = "claude-sonnet-4-6"
"""What ``AnthropicProvider`` uses when constructed with an empty model."""

API_KEY_ENV: dict[str, tuple[str, ...]] = {
    "anthropic": ("AVO_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
    "openai": ("AVO_OPENAI_API_KEY", "OPENAI_API_KEY"),
    "openai-responses": ("AVO_OPENAI_API_KEY", "OPENAI_API_KEY"),
    "groq": ("AVO_GROQ_API_KEY", "GROQ_API_KEY"),
    "cerebras": ("AVO_CEREBRAS_API_KEY", "CEREBRAS_API_KEY"),
    "openrouter": ("AVO_OPENROUTER_API_KEY", "OPENROUTER_API_KEY"),
    "gemini": ("AVO_GEMINI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "minimax": ("AVO_MINIMAX_API_KEY", "MINIMAX_API_KEY"),
    "ollama": ("AVO_OLLAMA_API_KEY",),
    "ollama-cloud": ("AVO_OLLAMA_CLOUD_API_KEY", "OLLAMA_API_KEY"),
}
"""Where each provider's key is read from, in order: avo's own variable (from the
environment, then as stored by ``avo login``), then the vendor's conventional
variable as a fallback (``avo doctor`` notes when that is the one used);
``ollama``'s key is optional."""

API_STYLE: dict[str, str] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-responses": "openai-responses",
    "groq": "openai",
    "cerebras": "openai",
    "openrouter": "openai",
    "gemini": "gemini",
    "ollama": "ollama",
    "ollama-cloud": "ollama",
}
"""The wire format each provider speaks (MiniMax: ``AVO_MINIMAX_API_STYLE``)."""

ENV_PREFIX: dict[str, str] = {"ollama-cloud": "AVO_OLLAMA", "openai-responses": "AVO_OPENAI"}
"""Providers sharing another's variables: ``openai-responses`` reads ``AVO_OPENAI_*``
(same key, base URL and model names as the Chat Completions adapter)."""


def env_prefix(name: str) -> str:
    """``AVO_{NAME}`` for provider ``name`` (``AVO_OLLAMA`` for ollama-cloud)."""
    return ENV_PREFIX.get(name, "AVO_" + name.upper().replace("-", "_"))


def env_vars(name: str, *extra: str) -> tuple[str, ...]:
    """Every env variable provider ``name`` reads."""
    prefix = env_prefix(name)
    keys = API_KEY_ENV.get(name, ())
    return (*keys, f"{prefix}_BASE_URL", f"{prefix}_MODEL", *extra)


def _per_1k(per_million_in: str, per_million_out: str) -> tuple[Decimal, Decimal]:
    thousand = Decimal(1000)
    return Decimal(per_million_in) / thousand, Decimal(per_million_out) / thousand


PRICING: dict[str, dict[str, tuple[Decimal, Decimal]]] = {
    "anthropic": {
        "claude-sonnet-4-6": _per_1k("3", "15"),
        "claude-sonnet-4-5": _per_1k("3", "15"),
        "claude-opus-4-5": _per_1k("5", "25"),
        "claude-haiku-4-5": _per_1k("1", "5"),
        "claude-3-5-sonnet": _per_1k("3", "15"),
        "claude-3-5-haiku": _per_1k("0.80", "4"),
        "claude-3-opus": _per_1k("15", "75"),
    },
    "openai": {
        "gpt-4o": _per_1k("2.50", "10"),
        "gpt-4o-mini": _per_1k("0.15", "0.60"),
        "gpt-4.1": _per_1k("2", "8"),
        "gpt-4.1-mini": _per_1k("0.40", "1.60"),
        "gpt-4.1-nano": _per_1k("0.10", "0.40"),
        "o1": _per_1k("15", "60"),
        "o1-mini": _per_1k("1.10", "4.40"),
        "o3-mini": _per_1k("1.10", "4.40"),
        "gpt-3.5-turbo": _per_1k("0.50", "1.50"),
    },
    "groq": {
        "llama-3.3-70b-versatile": _per_1k("0.59", "0.79"),
        "llama-3.1-8b-instant": _per_1k("0.05", "0.08"),
        "gemma2-9b-it": _per_1k("0.20", "0.20"),
    },
    "cerebras": {
        "llama-3.3-70b": _per_1k("0.85", "1.20"),
        "llama-3.1-8b": _per_1k("0.10", "0.10"),
    },
    "gemini": {
        "gemini-2.5-pro": _per_1k("1.25", "10"),
        "gemini-2.5-flash": _per_1k("0.30", "2.50"),
        "gemini-2.5-flash-lite": _per_1k("0.10", "0.40"),
        "gemini-2.0-flash": _per_1k("0.10", "0.40"),
    },
    "minimax": {"MiniMax-M2": _per_1k("0.30", "1.20")},
    "openrouter": {
        model: (Decimal(0), Decimal(0))
        for model in PROVIDER_MODELS["openrouter"]
        if model.endswith(":free")
    },
    "ollama": {model: (Decimal(0), Decimal(0)) for model in PROVIDER_MODELS["ollama"]},
}

CONTEXT_WINDOWS: dict[str, dict[str, int]] = {
    "anthropic": {
        "claude-sonnet-4-6": 200_000,
        "claude-sonnet-4-5": 200_000,
        "claude-opus-4-5": 200_000,
        "claude-haiku-4-5": 200_000,
        "claude-3-5-sonnet": 200_000,
        "claude-3-5-haiku": 200_000,
        "claude-3-opus": 200_000,
    },
    "openai": {
        "gpt-4o": 128_000,
        "gpt-4o-mini": 128_000,
        "gpt-4.1": 1_047_576,
        "gpt-4.1-mini": 1_047_576,
        "gpt-4.1-nano": 1_047_576,
        "o1": 200_000,
        "o1-mini": 128_000,
        "o1-preview": 128_000,
        "o3-mini": 200_000,
        "gpt-3.5-turbo": 16_385,
        "gpt-5": 400_000,
        "gpt-5-mini": 400_000,
        "gpt-5-nano": 400_000,
        "o3": 200_000,
        "o4-mini": 200_000,
    },
    "groq": {
        "llama-3.3-70b-versatile": 131_072,
        "llama-3.1-8b-instant": 131_072,
        "mixtral-8x7b-32768": 32_768,
        "gemma2-9b-it": 8_192,
    },
    "gemini": {
        "gemini-2.5-pro": 1_048_576,
        "gemini-2.5-flash": 1_048_576,
        "gemini-2.5-flash-lite": 1_048_576,
        "gemini-2.0-flash": 1_048_576,
    },
    "minimax": {"MiniMax-M2": 204_800},
    "openrouter": {
        "meta-llama/llama-3.3-70b-instruct:free": 131_072,
        "deepseek/deepseek-r1:free": 163_840,
        "deepseek/deepseek-chat-v3-0324:free": 163_840,
        "qwen/qwen-2.5-coder-32b-instruct:free": 32_768,
        "google/gemini-2.0-flash-exp:free": 1_048_576,
        "mistralai/mistral-7b-instruct:free": 32_768,
        "microsoft/phi-3-mini-128k-instruct:free": 128_000,
        "openai/gpt-4o-mini": 128_000,
        "anthropic/claude-sonnet-4.5": 200_000,
        "google/gemini-2.5-flash": 1_048_576,
    },
    # What the model supports; an Ollama server only uses as much as its num_ctx
    # option allows (set [context] window to that when it is smaller).
    "ollama": {
        "llama3.1": 131_072,
        "llama3.2": 131_072,
        "qwen2.5-coder": 32_768,
        "qwen2.5": 32_768,
        "mistral": 32_768,
        "mixtral": 32_768,
        "codellama": 16_384,
        "deepseek-coder-v2": 163_840,
        "phi3": 4_096,
        "gemma2": 8_192,
        "command-r": 131_072,
    },
}
"""Context windows (tokens) per model, from the vendors' model pages as of 2025-11;
a model not listed falls back to its provider's ``context_window`` capability."""
PRICING["openai-responses"] = PRICING["openai"]  # the Responses API bills like Chat
CONTEXT_WINDOWS["openai-responses"] = CONTEXT_WINDOWS["openai"]

CAPABILITIES: dict[str, ProviderCapabilities] = {
    "anthropic": ProviderCapabilities(
        streaming=True,
        tool_calls=True,
        parallel_tool_calls=True,
        vision=True,
        prompt_caching=True,
        context_window=200_000,
        documents=("application/pdf", "text/plain"),
        image_urls=True,
        document_urls=True,
        thinking=True,
    ),
    "openai": ProviderCapabilities(
        streaming=True,
        tool_calls=True,
        parallel_tool_calls=True,
        json_schema_output=True,
        vision=True,
        prompt_caching=True,
        context_window=128_000,
        documents=("application/pdf",),
        image_urls=True,
    ),
    "openai-responses": ProviderCapabilities(
        streaming=True,
        tool_calls=True,
        parallel_tool_calls=True,
        json_schema_output=True,
        vision=True,
        prompt_caching=True,
        context_window=128_000,
        documents=("application/pdf",),
        image_urls=True,
        document_urls=True,
        thinking=True,
    ),
    "groq": ProviderCapabilities(
        streaming=True, tool_calls=True, parallel_tool_calls=True, context_window=131_072
    ),
    "cerebras": ProviderCapabilities(
        streaming=True, tool_calls=True, parallel_tool_calls=True, context_window=128_000
    ),
    "openrouter": ProviderCapabilities(streaming=True, tool_calls=True, parallel_tool_calls=True),
    "gemini": ProviderCapabilities(
        streaming=True,
        tool_calls=True,
        parallel_tool_calls=True,
        json_schema_output=True,
        vision=True,
        prompt_caching=True,
        context_window=1_048_576,
        documents=("application/pdf",),
        thinking=True,
    ),
    "minimax": ProviderCapabilities(
        streaming=True, tool_calls=True, parallel_tool_calls=True, context_window=204_800
    ),
    # Images reach Ollama as base64 bytes; a model without vision refuses them
    # (its server says so). Documents reach it as text only.
    "ollama": ProviderCapabilities(streaming=True, tool_calls=True, vision=True),
    "ollama-cloud": ProviderCapabilities(streaming=True, tool_calls=True, vision=True),
    "router": ProviderCapabilities(streaming=True, tool_calls=True),
}
"""What each provider's API accepts; a model's catalog entry narrows it (see
:func:`model_capabilities`)."""


def model_capabilities(provider: str, model: str | None) -> ProviderCapabilities:
    """``provider``'s capabilities narrowed by what its catalog says of ``model``."""
    from avo_providers.model_info import model_info

    provider = "openai" if provider == "openai-compatible" else provider
    base = CAPABILITIES.get(provider) or ProviderCapabilities()
    info = model_info(provider, model)
    return info.capabilities(base) if info is not None else base


__all__ = [
    "ANTHROPIC_ADAPTER_DEFAULT_MODEL",
    "API_KEY_ENV",
    "CAPABILITIES",
    "CONTEXT_WINDOWS",
    "OLLAMA_CLOUD_MODELS",
    "PRICING",
    "PROVIDER_MODELS",
    "ProviderName",
    "env_prefix",
    "env_vars",
    "model_capabilities",
]
