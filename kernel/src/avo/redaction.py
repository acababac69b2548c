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
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

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

    def _is_clean(self, value: Any) -> bool:
        """True when ``value`` provably holds nothing to redact.

        One walk collects every string (and rejects any secret-named key), then
        a single marker scan and known-value check run over all of them joined.
        """
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
    "MASK",
    "MIN_SECRET_LENGTH",
    "SECRET_ENV_SUFFIXES",
    "Redactor",
    "is_secret_env_name",
    "is_secret_key",
    "redact_text",
    "redact_value",
    "secret_values",
]
