"""MiniMax: one provider, two wire formats (``AVO_MINIMAX_API_STYLE``).

``openai`` style posts Chat Completions to ``{base_url}/v1/chat/completions``;
``anthropic`` style posts Messages to ``{base_url}/anthropic/v1/messages`` with
``x-api-key`` and ``anthropic-version: 2023-06-01``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from avo.models import ModelRequest, ModelResponse
from avo_providers.anthropic import AnthropicProvider
from avo_providers.base_http import EventSink, HTTPProvider, MiniMaxConfig
from avo_providers.openai_compatible import OpenAICompatibleProvider

if TYPE_CHECKING:
    import httpx

    from avo.providers.streaming import ModelChunk

API_STYLES: tuple[str, ...] = ("openai", "anthropic")
DEFAULT_BASE_URL = "https://api.minimax.io"


class MiniMaxOpenAIStyle(OpenAICompatibleProvider):
    """MiniMax over the OpenAI Chat Completions format."""

    name: ClassVar[str] = "minimax"
    vendor: ClassVar[str] = "MiniMax"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    max_tokens_field: ClassVar[str] = "max_tokens"
    think_round_trip: ClassVar[bool] = True  # MiniMax asks for its <think> back in tool use
    supports_output_schema: ClassVar[bool] = False  # the run's schema goes in as an instruction

    def endpoint(self, *, stream: bool) -> str:
        """``/v1/chat/completions`` (a base URL already ending in ``/v1`` is respected)."""
        base = self.base_url if self.base_url.endswith("/v1") else f"{self.base_url}/v1"
        return f"{base}/chat/completions"


class MiniMaxAnthropicStyle(AnthropicProvider):
    """MiniMax over the Anthropic Messages format."""

    name: ClassVar[str] = "minimax"
    vendor: ClassVar[str] = "MiniMax"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL

    def endpoint(self, *, stream: bool) -> str:
        """``/anthropic/v1/messages`` (a base URL already ending in ``/anthropic`` is respected)."""
        base = self.base_url
        if not base.endswith("/anthropic"):
            base = f"{base}/anthropic"
        return f"{base}/v1/messages"


class MiniMaxProvider:
    """MiniMax in either API style; delegates to the adapter for that style."""

    name = "minimax"
    vendor = "MiniMax"

    def __init__(
        self,
        config: MiniMaxConfig,
        max_completion_tokens: int = 1024,
        request_timeout_seconds: float = 30.0,
        *,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if config.api_style not in API_STYLES:
            raise ValueError(
                f"MiniMax api_style must be one of {', '.join(API_STYLES)}, "
                f"got {config.api_style!r}"
            )
        impl_type = MiniMaxAnthropicStyle if config.api_style == "anthropic" else MiniMaxOpenAIStyle
        self._impl: HTTPProvider = impl_type(
            config, max_completion_tokens, request_timeout_seconds, client=client
        )
        self.config = config
        self.model = config.model
        self.api_style = config.api_style
        self.base_url = self._impl.base_url
        self.event_sink: EventSink | None = None
        self.supports_output_schema = bool(getattr(self._impl, "supports_output_schema", False))

    def __repr__(self) -> str:
        return f"MiniMaxProvider(model={self.model!r}, api_style={self.api_style!r})"

    @property
    def capabilities(self) -> Any:
        """What the model accepts (MiniMax's catalog entry)."""
        return self._impl.capabilities

    @property
    def api_key_configured(self) -> bool:
        """True when a credential will be sent."""
        return self._impl.api_key_configured

    def endpoint(self, *, stream: bool) -> str:
        """The URL requests go to."""
        return self._impl.endpoint(stream=stream)

    def build_payload(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The request body in the configured style."""
        return self._impl.build_payload(request, stream=stream)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """One non-streaming call."""
        return await self._impl.generate(request)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream chunks in the configured style."""
        return self._impl.stream(request)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._impl.aclose()


__all__ = ["API_STYLES", "MiniMaxAnthropicStyle", "MiniMaxOpenAIStyle", "MiniMaxProvider"]
