"""One shared secret-redaction helper for logs, audit lines, events, traces and errors.

A secret is any of:

* the value of an environment variable whose name ends in ``_KEY``,
  ``_TOKEN``, ``_SECRET`` or ``_PASSWORD`` (``AVO_OPENAI_API_KEY``,
  ``GITHUB_TOKEN``, ...), read from an injectable ``environ``;
* a bearer credential (``Authorization: Bearer abc...``);
* an API-key-shaped token (``sk-...``, ``sk-ant-...``, ``gsk_...``);
* a value stored under a secret-looking key in a mapping (``api_key``,
  ``authorization``, ``password``, ...).

Everything here is pure and cheap; :class:`Redactor` precompiles the known
values so it can be called on every log line.

Order matters: **redact, then shorten.** A key cut in half no longer matches
its value or its shape, so a message must be redacted whole before it is cut
(:meth:`Redactor.brief`); :func:`shorten` also prefers to cut before a
partial token rather than inside one.

What the *model* writes (its answer, a tool call's arguments, the text it
streams) is masked for **known** secret values only (:meth:`Redactor.known`,
:class:`StreamRedactor`): exact values are safe to replace, while masking by
shape would rewrite ordinary code such as ``token = load_token()``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from avo import _native

MASK = "***"
"""What every redacted secret is replaced with."""

SECRET_ENV_SUFFIXES: tuple[str, ...] = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
"""Environment variable name suffixes whose values are secrets."""

MIN_SECRET_LENGTH = 4
"""Shorter env values (``"1"``, ``"yes"``) are flags, not secrets, and are left alone."""

_SECRET_KEY_PATTERN = re.compile(
    r"(?:^|[_\-.])(?:api[_\-]?key|apikey|access[_\-]?key|secret[_\-]?key|private[_\-]?key|"
    r"client[_\-]?secret|token|access[_\-]?token|refresh[_\-]?token|id[_\-]?token|secret|"
    r"password|passwd|authorization|cookie|credentials?)$",
    re.IGNORECASE,
)

_TEXT_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization headers / bearer credentials.
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{6,}"), r"\1 " + MASK),
    (re.compile(r"(?i)(authorization\s*[:=]\s*[\"']?)(?!bearer\b)[^\s\"',;}]{6,}"), r"\1" + MASK),
    # Provider key shapes: sk-..., sk-ant-..., sk-proj-..., gsk_..., xai-..., AIza...
    (re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{8,}"), MASK),
    (re.compile(r"\b(?:gsk|ghp|gho|ghu|ghs|github_pat|xoxb|xoxp)_[A-Za-z0-9_]{8,}"), MASK),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), MASK),
    # key=value / "key": "value" pairs in query strings, headers and JSON-ish text.
    (
        re.compile(
            r"(?i)((?:api[_\-]?key|access[_\-]?token|token|secret|password|x-api-key)"
            r"[\"']?\s*[:=]\s*[\"']?)([^\s\"'&,;}]{4,})"
        ),
        r"\1" + MASK,
    ),
)


# Every secret-shaped pattern above contains one of these lower-case markers; one
# scan for them (the lookahead skips most positions cheaply) gates the patterns.
_MARKER_SCAN = re.compile(
    r"(?=[abgprstx])(?:bearer|authorization|[srp]k-|g(?:sk|h[pous]|ithub_pat)_|xox[bp]_|"
    r"aiza|api[_\-]?key|token|secret|password)"
)


ELLIPSIS = "\u2026"
"""What :func:`shorten` appends to a text it cut."""

_TRAILING_TOKEN = re.compile(r"[A-Za-z0-9_\-.~+/=]+$")
_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_\-.~+/=]")


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters (ending in an ellipsis when cut).

    The cut prefers a token boundary: a key-like run of characters that the
    limit would split is dropped whole rather than leaving its first
    characters behind (a single token longer than the limit is cut hard).
    Redact *before* calling this (see :meth:`Redactor.brief`).
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if _TOKEN_CHAR.match(text[limit - 1]):
        whole = _TRAILING_TOKEN.sub("", cut).rstrip()
        if whole:
            cut = whole
    return cut + ELLIPSIS


def is_secret_env_name(name: str) -> bool:
    """True when an environment variable named ``name`` holds a secret."""
    return name.upper().endswith(SECRET_ENV_SUFFIXES)


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """True when a mapping key (``api_key``, ``Authorization``, ``db_password``) names a secret."""
    return bool(_SECRET_KEY_PATTERN.search(key))


def secret_values(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values of every secret-named variable in ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    return frozenset(
        value
        for name, value in env.items()
        if is_secret_env_name(name) and len(value.strip()) >= MIN_SECRET_LENGTH
    )


class Redactor:
    """Masks known secret values and secret-shaped text.

    ``Redactor(environ=...)`` snapshots the secret env values once;
    :meth:`add` teaches it more values (a key passed in code, not via env).
    """

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self._values: set[str] = set(secret_values(environ))
        self._values.update(s for s in secrets if len(s) >= MIN_SECRET_LENGTH)
        self._compiled: re.Pattern[str] | None = None
        self._recompile()

    def _recompile(self) -> None:
        if not self._values:
            self._compiled = None
            return
        # Longest first so a key that contains another key is masked whole.
        ordered = sorted(self._values, key=len, reverse=True)
        self._compiled = re.compile("|".join(re.escape(v) for v in ordered))

    def add(self, *secrets: str) -> None:
        """Treat each of ``secrets`` as a secret value from now on."""
        before = len(self._values)
        self._values.update(s for s in secrets if len(s) >= MIN_SECRET_LENGTH)
        if len(self._values) != before:
            self._recompile()

    def text(self, text: str) -> str:
        """Return ``text`` with every known secret and secret-shaped token masked."""
        if self._compiled is not None and any(v in text for v in self._values):
            text = self._compiled.sub(MASK, text)
        if _MARKER_SCAN.search(text.lower()) is None:
            return text
        for pattern, replacement in _TEXT_PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def brief(self, text: str, limit: int) -> str:
        """Redact ``text`` whole, *then* shorten it to ``limit`` characters."""
        return shorten(self.text(text), limit)

    @property
    def known_values(self) -> frozenset[str]:
        """The exact secret values this redactor masks (env values and :meth:`add`-ed ones)."""
        return frozenset(self._values)

    def known(self, value: Any) -> Any:
        """Mask only the known secret *values* in a string or JSON-like value.

        Unlike :meth:`value` nothing is masked for its shape or its key's name,
        so code and prose the model writes stay as written; the same object is
        returned when nothing was masked.
        """
        compiled = self._compiled
        if compiled is None:
            return value
        if type(value) is str:
            if any(v in value for v in self._values):
                return compiled.sub(MASK, value)
            return value
        if type(value) in (dict, list, tuple):
            strings: list[str] = []
            _collect_all_strings(value, strings)
            joined = "\n".join(strings)
            if not any(v in joined for v in self._values):
                return value
            return _map_strings(value, self.known)
        return value

    def _is_clean(self, value: Any) -> bool:
        """True when ``value`` provably holds nothing to redact.

        One walk collects every string (and rejects any secret-named key), then
        a single marker scan and known-value check run over all of them joined.
        """
        joined = _native_joined_strings(value, is_secret_key) if _native_joined_strings else None
        if joined is None:
            strings: list[str] = []
            if not _collect_strings(value, strings):
                return False
            joined = "\n".join(strings)
        if any(v in joined for v in self._values):
            return False
        return _MARKER_SCAN.search(joined.lower()) is None

    def value(self, value: Any) -> Any:
        """Redact a JSON-like value: secret keys are masked, strings are scrubbed.

        The result is a new structure when anything was masked; a container with
        nothing to mask is returned as is (one walk and one scan), so the common
        case costs about as much as serializing it.
        """
        if type(value) in (dict, list, tuple) and self._is_clean(value):
            return value
        return self._value(value)

    def _value(self, value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if value is None or kind is int or kind is float or kind is bool:
            return value
        if kind is dict or isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if isinstance(key, str) and is_secret_key(key) and item not in (None, ""):
                    out[key] = MASK
                else:
                    out[key] = self._value(item)
            return out
        if isinstance(value, list | tuple):
            items = [self._value(item) for item in value]
            return items if isinstance(value, list) else tuple(items)
        return value


# The extension's twin of _collect_strings + "\n".join (None without it): the same
# strings in the same order, or None when the walk below must decide.
_native_joined_strings = _native.function("joined_strings")


def _collect_strings(value: Any, out: list[str]) -> bool:
    """Append every string in ``value`` to ``out``; False at a secret-named key."""
    stack = [value]
    pop, push, add = stack.pop, stack.append, out.append
    while stack:
        item = pop()
        kind = type(item)
        if kind is str:
            add(item)
        elif kind is dict or (kind is not list and isinstance(item, Mapping)):
            for key, sub in item.items():
                if type(key) is str and sub is not None and sub != "" and is_secret_key(key):
                    return False
                if type(sub) is str:
                    add(sub)
                elif sub is not None and type(sub) not in _SCALARS:
                    push(sub)
        elif kind is list or kind is tuple:
            for sub in item:
                if type(sub) is str:
                    add(sub)
                elif sub is not None and type(sub) not in _SCALARS:
                    push(sub)
        elif isinstance(item, str):
            add(item)
    return True


_SCALARS = frozenset({int, float, bool})


def _collect_all_strings(value: Any, out: list[str]) -> None:
    """Append every string (keys included) in a JSON-like ``value`` to ``out``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            for key, sub in item.items():
                stack.append(key)
                stack.append(sub)
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _map_strings(value: Any, fn: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        return {(fn(k) if isinstance(k, str) else k): _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_map_strings(item, fn) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value


class StreamRedactor:
    """Masks known secret values in streamed text, even when a value spans chunks.

    ``feed(text)`` passes on everything that can no longer turn into a known
    value and holds back only a tail that is the beginning of one; ``close()``
    flushes the rest. Text without any known value is passed on at once, so a
    stream is delayed only while it might be spelling a secret.
    """

    def __init__(self, redactor: Redactor, sink: Callable[[str], None]) -> None:
        self._values = sorted(redactor.known_values, key=len, reverse=True)
        self._known = redactor.known
        self._sink = sink
        self._held = ""

    def _hold_from(self, text: str) -> int:
        """Where the longest tail of ``text`` that begins a known value starts."""
        start = len(text)
        for value in self._values:
            for size in range(min(len(value) - 1, len(text)), 0, -1):
                if text.endswith(value[:size]):
                    start = min(start, len(text) - size)
                    break
        return start

    def feed(self, text: str) -> None:
        """Pass ``text`` on, masked, except a tail that may still become a known value."""
        if not self._values:
            if text:
                self._sink(text)
            return
        buffer = self._known(self._held + text)
        cut = self._hold_from(buffer)
        self._held = buffer[cut:]
        if cut:
            self._sink(buffer[:cut])

    def close(self) -> None:
        """Flush what is held back (it never completed a known value)."""
        if self._held:
            self._sink(self._held)
            self._held = ""


def redact_text(
    text: str,
    *,
    environ: Mapping[str, str] | None = None,
    secrets: Iterable[str] = (),
) -> str:
    """Mask secrets in ``text`` (one-off form of :meth:`Redactor.text`)."""
    return Redactor(environ=environ, secrets=secrets).text(text)


def redact_value(
    value: Any,
    *,
    environ: Mapping[str, str] | None = None,
    secrets: Iterable[str] = (),
) -> Any:
    """Mask secrets in a JSON-like value (one-off form of :meth:`Redactor.value`)."""
    return Redactor(environ=environ, secrets=secrets).value(value)


__all__ = [
    "ELLIPSIS",
    "MASK",
    "MIN_SECRET_LENGTH",
    "SECRET_ENV_SUFFIXES",
    "Redactor",
    "StreamRedactor",
    "is_secret_env_name",
    "is_secret_key",
    "redact_text",
    "redact_value",
    "secret_values",
    "shorten",
]
