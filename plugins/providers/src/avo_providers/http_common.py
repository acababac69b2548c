"""Shared HTTP helpers for every adapter: errors, redaction, SSE, tool schemas.

Nothing here imports httpx at module import time; the functions that need it
take the response objects httpx hands them.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import UTC
from typing import Any

from pydantic import JsonValue

from avo.exceptions import ProviderError
from avo.models import FinishReason, ToolMetadata

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
"""4xx statuses that mean "try again" (timeouts, conflicts, rate limits); every 5xx is too."""

_MAX_DETAIL = 300


class ProviderHTTPError(ProviderError):
    """A vendor answered with an HTTP error status.

    ``status_code`` is the HTTP status, ``retry_after`` the seconds the vendor asked
    us to wait (``Retry-After`` / ``retry-after-ms`` headers) when it said so.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        vendor: str,
        status_code: int,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(
            message, retryable=retryable, retry_after=retry_after, status_code=status_code
        )
        self.vendor = vendor


def redact_text(text: str, *secrets: str | None) -> str:
    """Mask ``secrets`` (API keys) and anything key-shaped in ``text``."""
    from avo.redaction import redact_text as _kernel_redact

    known = [s for s in secrets if s and len(s) >= 4]
    # Exact known values first (they may not look like keys), then the kernel's
    # patterns for bearer tokens and vendor key shapes.
    for secret in known:
        text = text.replace(secret, "***")
    return _kernel_redact(text, environ={}, secrets=known)


def json_safe_content(content: Any) -> str:
    """Render a message ``content`` value as the string vendors expect."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, dict) and part.get("type") == "text" for part in content
    ):
        # text blocks (a task, a placeholder for media the model cannot take) one per line
        return "\n".join(str(part.get("text", "")) for part in content)
    return json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)


def parse_json_content(content: Any) -> Any:
    """Decode a tool message's JSON string content, leaving other text as is."""
    if not isinstance(content, str):
        return content
    try:
        return json.loads(content)
    except ValueError:
        return content


def recorded_call_arguments(function: Mapping[str, Any]) -> Any:
    """A recorded tool call's ``function.arguments`` as an object (a JSON string is decoded).

    The runtime's messages carry OpenAI-shape calls; Anthropic, Gemini and Ollama
    want the arguments as a JSON object instead.
    """
    arguments = function.get("arguments") or "{}"
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def vendor_call_id(entry: Mapping[str, Any]) -> Any:
    """The id to send back for a recorded tool call: the vendor's own, else the kernel's."""
    return entry.get("vendor_id") or entry.get("id")


def vendor_result_id(message: Mapping[str, Any]) -> Any:
    """The call id a ``role: tool`` message answers, as the vendor knows it."""
    return message.get("vendor_id") or message.get("tool_call_id")


def own_thinking(message: Mapping[str, Any], source: str) -> list[dict[str, Any]]:
    """The thinking blocks of an assistant message that ``source`` made, without the tag.

    Blocks carry their vendor's signature; another vendor cannot check them, so
    each adapter sends back only its own.
    """
    blocks = message.get("thinking")
    if not isinstance(blocks, list):
        return []
    return [
        {key: value for key, value in block.items() if key != "source"}
        for block in blocks
        if isinstance(block, dict) and block.get("source") == source
    ]


def map_finish(table: Mapping[str, FinishReason], raw: Any) -> FinishReason | None:
    """A vendor's finish reason as a FinishReason (``unknown`` when not in ``table``)."""
    if raw is None or raw == "":
        return None
    return table.get(str(raw), FinishReason.UNKNOWN)


def retry_after_seconds(
    headers: Mapping[str, str], *, now: Callable[[], float] = time.time
) -> float | None:
    """The wait a vendor asked for: ``retry-after-ms``, else ``Retry-After`` in seconds
    or as an HTTP date (RFC 9110), measured from ``now``; None when absent or unreadable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now())


def _error_detail(body: str) -> str:
    """Pull the human message out of a vendor error body (every vendor nests it).

    Not shortened: callers redact the whole detail first, then shorten it
    (:func:`brief`), so a key the vendor echoes is never cut in half.
    """
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            message = error.get("message") or error.get("type") or error.get("status")
            kind = error.get("type") or error.get("status")
            if message and kind and kind != message:
                return f"{kind}: {message}"
            if message:
                return str(message)
        if isinstance(error, str):
            return error
    return body.strip()


def brief(text: str, *secrets: str | None, limit: int = _MAX_DETAIL) -> str:
    """``text`` redacted whole (``secrets`` and key shapes), *then* shortened to ``limit``."""
    from avo.redaction import shorten

    return shorten(redact_text(text, *secrets), limit)


def error_from_status(
    vendor: str,
    status_code: int,
    body: str,
    headers: Mapping[str, str],
    *,
    secrets: Sequence[str | None] = (),
) -> ProviderHTTPError:
    """Map an HTTP error status to a ``ProviderError`` with ``retryable`` set right."""
    retryable = status_code in RETRYABLE_STATUS or status_code >= 500
    retry_after = retry_after_seconds(headers)
    detail = brief(_error_detail(body), *secrets) or "no error detail"
    message = f"{vendor} API returned HTTP {status_code}: {detail}"
    if retry_after is not None:
        message += f" (retry after {retry_after:g}s)"
    return ProviderHTTPError(
        message,
        retryable=retryable,
        vendor=vendor,
        status_code=status_code,
        retry_after=retry_after,
    )


def error_from_transport(
    vendor: str, exc: BaseException, *, timeout: float, secrets: Sequence[str | None] = ()
) -> ProviderError:
    """Map an httpx transport failure (timeout, refused connection, ...) to a retryable error."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(
            f"{vendor} request timed out after {timeout:g}s ({type(exc).__name__})",
            retryable=True,
        )
    detail = brief(str(exc), *secrets) or type(exc).__name__
    return ProviderError(f"{vendor} request failed: {type(exc).__name__}: {detail}", retryable=True)


def malformed(vendor: str, what: str) -> ProviderError:
    """The non-retryable error for a response that breaks the vendor's documented shape."""
    return ProviderError(f"{vendor} returned a malformed response: {what}", retryable=False)


def stream_error(vendor: str, error: Any) -> ProviderError:
    """An error object the vendor sent inside a stream (often an upstream failure).

    Retryable: the request itself was accepted, so trying again can succeed. Key
    shapes are masked; the adapter masks its own key and shortens the message
    (in that order) before the error leaves it.
    """
    detail = redact_text(_error_detail(json.dumps({"error": error})))
    return ProviderError(f"{vendor} stream error: {detail}", retryable=True)


def check_content_type(vendor: str, content_type: str | None, expected: Iterable[str]) -> None:
    """Refuse a response whose ``Content-Type`` is none of ``expected`` substrings."""
    value = (content_type or "").lower()
    if not any(token in value for token in expected):
        wanted = " or ".join(expected)
        raise malformed(vendor, f"unexpected content type {content_type!r} (expected {wanted})")


def decode_json(vendor: str, text: str) -> Any:
    """``json.loads`` that fails as a ProviderError naming the vendor."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        snippet = text[:80]
        raise malformed(vendor, f"invalid JSON ({exc.msg}) in {snippet!r}") from None


def parse_tool_arguments(vendor: str, raw: Any, tool_name: str) -> dict[str, JsonValue]:
    """Tool-call arguments as a dict, from a JSON string or an object."""
    if raw is None or raw == "":
        return {}
    value = decode_json(vendor, raw) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise malformed(
            vendor, f"arguments of tool call {tool_name!r} are not a JSON object: {raw!r}"
        )
    return value


def require_tool_name(vendor: str, name: Any) -> str:
    """A tool call's name, or a ProviderError saying it is missing."""
    if not isinstance(name, str) or not name:
        raise malformed(vendor, "a tool call has no name")
    return name


def openai_tools(tools: Sequence[ToolMetadata]) -> list[dict[str, Any]]:
    """``ToolMetadata`` as OpenAI ``tools`` entries (also Groq, Cerebras, OpenRouter, Ollama)."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]


def anthropic_tools(tools: Sequence[ToolMetadata]) -> list[dict[str, Any]]:
    """``ToolMetadata`` as Anthropic ``tools`` entries."""
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
        for tool in tools
    ]


async def iter_sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """Yield ``(event, data)`` pairs from Server-Sent Events lines.

    Follows the SSE spec: ``data:`` lines of one event are joined with newlines,
    a blank line dispatches, ``:`` lines are comments, the default event is
    ``message``.
    """
    event = "message"
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if data:
        yield event, "\n".join(data)


async def iter_sse_lines(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` payload of each SSE event (OpenAI-style streams ignore event names)."""
    async for _event, data in iter_sse_events(lines):
        yield data


iter_anthropic_sse_events = iter_sse_events
"""Anthropic streams name their events; same parser, kept under its established name."""

# The format-specific helpers live with their format; they are
# re-exported on first use (importing them eagerly would be circular).
_FORMAT_HELPERS = {
    "build_openai_payload": "avo_providers.openai_compatible",
    "parse_openai_response": "avo_providers.openai_compatible",
    "parse_openai_stream_payload": "avo_providers.openai_compatible",
    "_normalize_openai_tool_delta": "avo_providers.openai_compatible",
    "stream_openai_chunks": "avo_providers.openai_compatible",
    "parse_anthropic_stream_event": "avo_providers.anthropic",
    "stream_anthropic_chunks": "avo_providers.anthropic",
}


def __getattr__(name: str) -> Any:
    module = _FORMAT_HELPERS.get(name)
    if module is None:
        raise AttributeError(f"module 'avo_providers.http_common' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "RETRYABLE_STATUS",
    "ProviderHTTPError",
    "anthropic_tools",
    "brief",
    "check_content_type",
    "decode_json",
    "error_from_status",
    "error_from_transport",
    "iter_anthropic_sse_events",
    "iter_sse_events",
    "iter_sse_lines",
    "json_safe_content",
    "malformed",
    "map_finish",
    "openai_tools",
    "own_thinking",
    "parse_json_content",
    "parse_tool_arguments",
    "recorded_call_arguments",
    "redact_text",
    "require_tool_name",
    "retry_after_seconds",
    "stream_error",
    "vendor_call_id",
    "vendor_result_id",
]
