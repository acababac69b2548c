"""``[provider.settings]`` tables for avo.toml, validated before a factory runs.

Every field is optional: what is unset comes from the environment
(``AVO_{NAME}_*``) or the catalog default. Prefer env vars for API keys;
``api_key`` here exists for secrets managers that render config files.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class HTTPProviderSettings(BaseModel):
    """Settings every HTTP adapter accepts."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="Model id; default AVO_{NAME}_MODEL.")
    base_url: str | None = Field(default=None, description="API base URL override.")
    api_key: str | None = Field(default=None, description="API key; prefer the env var.")
    max_completion_tokens: int = Field(default=1024, gt=0, description="Output token cap.")
    request_timeout_seconds: float = Field(default=30.0, gt=0, description="HTTP timeout.")


class MiniMaxSettings(HTTPProviderSettings):
    """MiniMax adds the wire format."""

    api_style: Literal["openai", "anthropic"] | None = Field(
        default=None, description="openai or anthropic; default AVO_MINIMAX_API_STYLE."
    )


class OpenAIResponsesSettings(HTTPProviderSettings):
    """The Responses API adds how tools are chosen and how hard reasoning models think."""

    tool_choice: str = Field(
        default="auto",
        min_length=1,
        description="auto, required, none, or the name of the tool the model must call.",
    )
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        default=None, description="Reasoning models only; default: the model's own."
    )
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = Field(
        default=None, description="Ask reasoning models for a summary shown as thoughts."
    )


class RouterSettings(BaseModel):
    """The router's routes and strategy (defaults from AVO_ROUTER_*)."""

    model_config = ConfigDict(extra="forbid")

    routes: list[str] | None = Field(default=None, description="Provider names, in order.")
    strategy: Literal["fallback", "race", "fastest", "parallel"] | None = None
    cooldown_seconds: float | None = Field(default=None, ge=0)
    speculative_delay_ms: float | None = Field(default=None, ge=0)
    max_completion_tokens: int = Field(default=1024, gt=0)
    request_timeout_seconds: float = Field(default=30.0, gt=0)


__all__ = [
    "HTTPProviderSettings",
    "MiniMaxSettings",
    "OpenAIResponsesSettings",
    "RouterSettings",
]
