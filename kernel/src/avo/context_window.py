"""How big a model's context window is, and how big a request is getting.

Two small things the request seam and context policies share:

- :func:`resolve_context_window` picks the window for a provider's model, in
  this order: an explicit value (``[context] window``, ``AgentRuntime(context_window=)``),
  ``AVO_CONTEXT_WINDOW_LIMIT``, the provider plugin's catalog (per model, then
  provider-wide), the provider object's own ``context_window`` attribute, the
  known model-name patterns of :mod:`avo.context_advisor`, and finally the
  configured default. The answer says where it came from
  (:attr:`ContextWindow.source`), so "unknown" is never silent.
- :class:`TokenGauge` estimates the tokens of a growing transcript in O(new
  messages) per step: it keeps prefix sums over the messages it has measured
  and checks by identity that the transcript only grew since the last call.
  The estimate is the cheap ``characters / 4`` one, plus a few tokens of
  framing per message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from avo.exceptions import ConfigError

DEFAULT_WINDOW = 8_192
"""The window assumed when nothing knows the model's (``[context] default_window``)."""
MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens counted for each message's framing (role, separators)."""
CHARS_PER_TOKEN = 4
_CALL_FRAMING = 48  # a call's id, type and keys, in characters

WINDOW_SOURCES = ("config", "environment", "catalog", "provider", "pattern", "default")
"""Where a window can come from, most to least authoritative."""


@dataclass(frozen=True)
class ContextWindow:
    """A model's context window in tokens, and where that number came from.

    ``source`` is one of :data:`WINDOW_SOURCES`; ``"default"`` means the model's
    window is unknown and ``tokens`` is the configured default.
    """

    tokens: int
    source: str
    model: str | None = None

    @property
    def known(self) -> bool:
        """False when ``tokens`` is only the configured default."""
        return self.source != "default"

    def as_json(self) -> dict[str, Any]:
        """``{"tokens", "source", "model"}`` for event payloads."""
        return {"tokens": self.tokens, "source": self.source, "model": self.model}


def _positive(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{what} must be a positive number of tokens, got {value!r}", key=what)
    return value


def resolve_context_window(
    *,
    model: str | None = None,
    explicit: int | None = None,
    catalog: Mapping[str, int] | None = None,
    provider_window: int | None = None,
    provider: Any = None,
    default: int = DEFAULT_WINDOW,
    environ: Mapping[str, str] | None = None,
) -> ContextWindow:
    """The context window for ``model``; see the module docstring for the order.

    :param explicit: a configured window (wins over everything).
    :param catalog: the provider plugin's per-model windows (``ProviderSpec.context_windows``).
    :param provider_window: the provider-wide window (``ProviderCapabilities.context_window``).
    :param provider: the provider object; its ``context_window`` attribute is used if set.
    :param default: the window assumed when none of the above knows.
    """
    from avo.context_advisor import CONTEXT_LIMIT_ENV, known_limit

    if explicit is not None:
        return ContextWindow(_positive(explicit, "context window"), "config", model)
    env = os.environ if environ is None else environ
    raw = env.get(CONTEXT_LIMIT_ENV, "").strip()
    if raw:
        try:
            forced = int(raw)
        except ValueError:
            raise ConfigError(
                f"{CONTEXT_LIMIT_ENV}={raw!r} is not a whole number of tokens; "
                "set it to e.g. 8192 or unset it",
                key=CONTEXT_LIMIT_ENV,
            ) from None
        return ContextWindow(max(1_000, forced), "environment", model)
    if catalog and model and model in catalog:
        tokens = _positive(catalog[model], f"context window of {model}")
        return ContextWindow(tokens, "catalog", model)
    if provider_window is not None:
        tokens = _positive(provider_window, "provider context window")
        return ContextWindow(tokens, "catalog", model)
    attribute = getattr(provider, "context_window", None)
    if isinstance(attribute, int) and not isinstance(attribute, bool) and attribute > 0:
        return ContextWindow(attribute, "provider", model)
    guessed = known_limit(model or "")
    if guessed is not None:
        return ContextWindow(guessed, "pattern", model)
    return ContextWindow(_positive(default, "[context] default_window"), "default", model)


def _text_length(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False, default=str))


IMAGE_TOKENS = 1_600
"""The estimate for one image (vendors bill a large image at about this many tokens)."""


def _block_chars(block: Any) -> int:
    """Characters one content block weighs: its text, or an estimate for media."""
    if type(block) is not dict:
        return _text_length(block)
    kind = block.get("type")
    if kind == "text":
        return len(str(block.get("text") or ""))
    if kind == "image":
        return IMAGE_TOKENS * CHARS_PER_TOKEN
    if kind == "document":
        size = block.get("size")
        if not isinstance(size, int):
            data = block.get("data")
            size = len(data) * 3 // 4 if isinstance(data, str) else 0
        media_type = str(block.get("media_type") or "")
        if media_type.startswith("text/"):
            return size  # about one character per byte
        # A PDF page is read as text and as an image: about a token per 40 bytes.
        return max(IMAGE_TOKENS, size // 40) * CHARS_PER_TOKEN
    return _text_length(block)


def message_tokens(message: Mapping[str, Any]) -> int:
    """Estimated tokens of one transcript message (content, tool calls, framing).

    Images count :data:`IMAGE_TOKENS` each and documents by their size, never
    by the length of their base64 text or blob reference.
    """
    content = message.get("content")
    if type(content) is str:
        chars = len(content)
    elif type(content) is list:
        chars = sum(_block_chars(block) for block in content)
    else:
        chars = _text_length(content)
    calls = message.get("tool_calls")
    if calls:
        for call in calls:
            function = call.get("function") if type(call) is dict else None
            if type(function) is dict:  # the usual shape: no JSON encoding needed
                arguments = function.get("arguments")
                chars += _CALL_FRAMING + len(str(function.get("name") or ""))
                chars += len(arguments) if type(arguments) is str else _text_length(arguments)
            else:
                chars += _text_length(call)
    return chars // CHARS_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS


def messages_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Estimated tokens of several messages."""
    return sum(message_tokens(m) for m in messages)


def tools_tokens(tools: Sequence[Any]) -> int:
    """Estimated tokens of the tool declarations a request carries."""
    total = 0
    for tool in tools:
        dump = getattr(tool, "model_dump", None)
        data = dump(mode="json") if callable(dump) else tool
        total += _text_length(data) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS
    return total


class TokenGauge:
    """Prefix sums of message token estimates over a transcript that only grows.

    ``update(messages)`` measures only the messages added since the last call;
    if the transcript was rewritten instead (its last measured message is no
    longer in place), it measures everything again. ``sums[i]`` is the estimate
    of ``messages[:i]``, so any range costs two lookups (:meth:`between`).
    """

    __slots__ = ("_last", "sums")

    def __init__(self) -> None:
        self.sums: list[int] = [0]
        self._last: object = None

    def update(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Measure what is new in ``messages``; return the whole transcript's estimate."""
        sums = self.sums
        measured = len(sums) - 1
        size = len(messages)
        if measured and (measured > size or messages[measured - 1] is not self._last):
            del sums[1:]
            measured = 0
        if size > measured:
            total = sums[-1]
            append = sums.append
            for message in messages[measured:]:
                total += message_tokens(message)
                append(total)
            self._last = messages[-1]
        return sums[-1]

    @property
    def total(self) -> int:
        """The estimate of every message measured so far."""
        return self.sums[-1]

    def between(self, start: int, stop: int) -> int:
        """The estimate of ``messages[start:stop]`` (indices into the measured transcript)."""
        return self.sums[stop] - self.sums[start]


__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_WINDOW",
    "MESSAGE_OVERHEAD_TOKENS",
    "WINDOW_SOURCES",
    "ContextWindow",
    "TokenGauge",
    "message_tokens",
    "messages_tokens",
    "resolve_context_window",
    "tools_tokens",
]
