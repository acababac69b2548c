"""The shared shape of every HTTP adapter: config, client, requests, stream validation.

A vendor adapter subclasses :class:`HTTPProvider` and fills in four things: its
headers, its endpoint, how to build a payload, and how to parse a response and
a stream. Transport errors, HTTP errors, content types, JSON decoding and API
key redaction are handled once, here.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import ValidationError

from avo.exceptions import ProviderError
from avo.models import ModelRequest, ModelResponse
from avo_providers.http_common import (
    brief,
    check_content_type,
    decode_json,
    error_from_status,
    error_from_transport,
    redact_text,
)

_MAX_MESSAGE = 600
"""The longest provider error message an adapter raises (after redaction)."""

if TYPE_CHECKING:
    import httpx

    from avo.plugins import ProviderCapabilities
    from avo.providers.streaming import ModelChunk

ApiStyle = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class ProviderConfig:
    """Where and as whom an adapter talks. ``api_key`` never appears in ``repr``."""

    model: str
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


OpenAIConfig = ProviderConfig


@dataclass(frozen=True)
class MiniMaxConfig(ProviderConfig):
    """MiniMax speaks both the OpenAI and the Anthropic wire formats."""

    api_style: ApiStyle = "openai"


@functools.cache
def _ssl_context() -> Any:
    """One TLS context for every client: building one costs tens of milliseconds."""
    import httpx

    return httpx.create_ssl_context()


EventSink = Callable[[Any, dict[str, Any]], Awaitable[None]]


class HTTPProvider:
    """Base for the HTTP adapters: ``generate`` and ``stream`` over httpx."""

    name: ClassVar[str] = "http"
    vendor: ClassVar[str] = "HTTP"
    default_base_url: ClassVar[str] = ""
    api_style: ClassVar[str] = "openai"

    def __init__(
        self,
        config: ProviderConfig,
        max_completion_tokens: int = 1024,
        request_timeout_seconds: float = 30.0,
        *,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if max_completion_tokens <= 0:
            raise ValueError(f"max_completion_tokens must be positive, got {max_completion_tokens}")
        self.config = config
        self.model = config.model
        self.base_url = (config.base_url or self.default_base_url).rstrip("/")
        self.max_completion_tokens = max_completion_tokens
        self.request_timeout_seconds = request_timeout_seconds
        self._client = client
        self._owns_client = client is None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self.event_sink: EventSink | None = None

    @property
    def capabilities(self) -> ProviderCapabilities:
        """What this adapter's API and model accept (images, documents, URLs, ...)."""
        from avo_providers.catalog import model_capabilities

        return model_capabilities(self.name, self.model)

    # ------------------------------------------------------------ vendor hooks
    def headers(self) -> dict[str, str]:
        """Request headers including auth."""
        raise NotImplementedError

    def endpoint(self, *, stream: bool) -> str:
        """The URL for a generate (``stream=False``) or stream request."""
        raise NotImplementedError

    def build_payload(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The vendor's JSON request body for ``request``."""
        raise NotImplementedError

    def parse_response(self, data: Any) -> ModelResponse:
        """The vendor's JSON response as a ModelResponse."""
        raise NotImplementedError

    def parse_stream(self, lines: AsyncIterator[str]) -> AsyncIterator[ModelChunk]:
        """Normalized chunks from the vendor's stream lines; raise when it is truncated."""
        raise NotImplementedError

    stream_content_types: ClassVar[tuple[str, ...]] = ("text/event-stream",)

    # ------------------------------------------------------------ shared machinery
    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def api_key_configured(self) -> bool:
        """True when a credential will be sent."""
        return bool(self.config.api_key)

    def redact(self, text: str) -> str:
        """``text`` with this provider's API key (and anything key-shaped) masked."""
        return redact_text(text, self.config.api_key)

    def _scrub(self, exc: ProviderError) -> ProviderError:
        """``exc`` with this provider's key (and key shapes) masked, *then* shortened.

        The exception keeps its type and attributes (status code, retry-after);
        only its message changes, and only when there was something to change.
        """
        text = str(exc)
        clean = brief(text, self.config.api_key, limit=_MAX_MESSAGE)
        if clean != text:
            exc.args = (clean, *exc.args[1:])
        return exc

    async def _get_client(self) -> httpx.AsyncClient:
        """The HTTP client, made for the running event loop and closed with it.

        A client's pooled connections belong to the loop that opened them, so a
        provider used again under a new loop (a second ``asyncio.run``) gets a
        new client instead of failing with "Event loop is closed" on a kept-alive
        connection of the old one. The client is closed when its loop shuts down
        its async generators (``asyncio.run`` does as it ends), so no socket is
        left open behind it. An injected client is used as given.
        """
        loop = asyncio.get_running_loop()
        if self._owns_client and self._client is not None and self._client_loop is not loop:
            self._client = None  # its own loop closes it (see _closed_with_loop)
        if self._client is None:
            import httpx

            client = httpx.AsyncClient(timeout=self.request_timeout_seconds, verify=_ssl_context())
            closer = _closed_with_loop(client)
            await closer.__anext__()  # parked: the loop's shutdown_asyncgens() finishes it
            self._client, self._client_loop, self._closer = client, loop, closer
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this provider created (an injected one is left open)."""
        if self._client is not None and self._owns_client:
            closer, self._client, self._closer = self._closer, None, None
            if closer is not None and self._client_loop is asyncio.get_running_loop():
                await closer.aclose()  # closes the client (a client of another loop: that loop)

    def _transport_error(self, exc: BaseException) -> ProviderError:
        return error_from_transport(
            self.vendor, exc, timeout=self.request_timeout_seconds, secrets=[self.config.api_key]
        )

    def _status_error(
        self, status_code: int, body: str, headers: Mapping[str, str]
    ) -> ProviderError:
        return error_from_status(
            self.vendor, status_code, body, headers, secrets=[self.config.api_key]
        )

    def _malformed(self, what: str, exc: BaseException) -> ProviderError:
        """The non-retryable error for a response or stream the parser choked on."""
        return ProviderError(
            f"{self.vendor} returned a malformed {what}: {type(exc).__name__}: "
            f"{brief(str(exc), self.config.api_key)}",
            retryable=False,
        )

    def _all_headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json"}
        headers.update(self.headers())
        headers.update(self.config.headers)
        return headers

    def _response(self, build: Callable[[], ModelResponse]) -> ModelResponse:
        try:
            return build()
        except ProviderError as exc:
            raise self._scrub(exc) from None
        except (ValidationError, KeyError, TypeError, AttributeError, IndexError) as exc:
            raise self._malformed("response", exc) from None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """One non-streaming call."""
        import httpx

        payload = self.build_payload(request, stream=False)
        try:
            response = await (await self._get_client()).post(
                self.endpoint(stream=False),
                json=payload,
                headers=self._all_headers(),
                timeout=self.request_timeout_seconds,
            )
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400:
            raise self._status_error(response.status_code, response.text, response.headers)
        check_content_type(self.vendor, response.headers.get("content-type"), ("json",))
        text = response.text
        return self._response(lambda: self.parse_response(decode_json(self.vendor, text)))

    async def _lines(self, request: ModelRequest) -> AsyncGenerator[str, None]:
        import httpx

        payload = self.build_payload(request, stream=True)
        headers = self._all_headers()
        headers["accept"] = ", ".join(self.stream_content_types)
        try:
            async with (await self._get_client()).stream(
                "POST",
                self.endpoint(stream=True),
                json=payload,
                headers=headers,
                timeout=self.request_timeout_seconds,
            ) as response:
                if response.status_code >= 400:
                    body = (await response.aread()).decode("utf-8", "replace")
                    raise self._status_error(response.status_code, body, response.headers)
                check_content_type(
                    self.vendor, response.headers.get("content-type"), self.stream_content_types
                )
                async for line in response.aiter_lines():
                    yield line
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream normalized chunks; the stream is validated with the kernel's assembler.

        Whatever the runtime assembles from these chunks equals what ``generate``
        returns for the same vendor answer. A stream that cannot assemble
        (a tool call without a name, broken argument JSON) fails here, naming the
        vendor, instead of later in the runtime.
        """
        from avo.providers.streaming import StreamAssembler

        assembler = StreamAssembler()
        lines = self._lines(request)
        try:
            async for chunk in self.parse_stream(lines):
                assembler.feed(chunk)
                yield chunk
        except ProviderError as exc:
            raise self._scrub(exc) from None
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            raise self._malformed("stream", exc) from None
        finally:
            await lines.aclose()
        try:
            assembler.build()
        except ProviderError as exc:
            raise ProviderError(
                f"{self.vendor} returned a malformed stream: {exc}", retryable=False
            ) from None
        except ValidationError as exc:
            raise ProviderError(
                f"{self.vendor} returned a malformed stream: {exc.errors()[0]['msg']}",
                retryable=False,
            ) from None


__all__ = ["ApiStyle", "HTTPProvider", "MiniMaxConfig", "OpenAIConfig", "ProviderConfig"]


async def _closed_with_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Park until the event loop shuts down its async generators, then close ``client``."""
    try:
        yield
    finally:
        await client.aclose()
