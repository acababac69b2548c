"""Groq, Cerebras and OpenRouter: OpenAI-compatible servers with their own defaults."""

from __future__ import annotations

from typing import ClassVar

from avo_providers.openai_compatible import OpenAICompatibleProvider

OPENROUTER_DEFAULT_SITE_URL = "https://github.com/Fqih/avo"
OPENROUTER_DEFAULT_APP_NAME = "Avo Agent Runtime"


class GroqProvider(OpenAICompatibleProvider):
    """Groq's OpenAI-compatible API."""

    name: ClassVar[str] = "groq"
    vendor: ClassVar[str] = "Groq"
    default_base_url: ClassVar[str] = "https://api.groq.com/openai/v1"
    # JSON-schema output on a few models only: the run's schema goes in as an instruction.
    supports_output_schema: ClassVar[bool] = False


class CerebrasProvider(OpenAICompatibleProvider):
    """Cerebras Inference's OpenAI-compatible API."""

    name: ClassVar[str] = "cerebras"
    vendor: ClassVar[str] = "Cerebras"
    default_base_url: ClassVar[str] = "https://api.cerebras.ai/v1"


class OpenRouterProvider(OpenAICompatibleProvider):
    """OpenRouter; sends ``HTTP-Referer`` / ``X-Title`` attribution headers."""

    name: ClassVar[str] = "openrouter"
    vendor: ClassVar[str] = "OpenRouter"
    default_base_url: ClassVar[str] = "https://openrouter.ai/api/v1"
    max_tokens_field: ClassVar[str] = "max_tokens"
    # Whether JSON-schema output works depends on the routed model: use an instruction.
    supports_output_schema: ClassVar[bool] = False
    # Reasoning models behind it (Claude with thinking, Gemini) need their signed
    # reasoning back with the tool calls it led to.
    reasoning_details_round_trip: ClassVar[bool] = True

    def headers(self) -> dict[str, str]:
        """Bearer auth plus the attribution headers (overridable via config headers)."""
        headers = super().headers()
        headers["HTTP-Referer"] = OPENROUTER_DEFAULT_SITE_URL
        headers["X-Title"] = OPENROUTER_DEFAULT_APP_NAME
        return headers


__all__ = ["CerebrasProvider", "GroqProvider", "OpenRouterProvider"]
