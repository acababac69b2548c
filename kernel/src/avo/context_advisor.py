"""Warn before a conversation outgrows the model's context window.

Limits come from ``AVO_CONTEXT_WINDOW_LIMIT`` (floor 1,000) when set, else a
small pattern table, else 8,192. Token counts are the cheap ``len(text) // 4``
estimate unless the caller passes the provider's reported count.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from avo.exceptions import ConfigError

CONTEXT_LIMIT_ENV = "AVO_CONTEXT_WINDOW_LIMIT"
WARNING_THRESHOLD_ENV = "AVO_CONTEXT_WARNING_THRESHOLD"
_DEFAULT_FALLBACK_LIMIT = 8_192
_MIN_LIMIT = 1_000
_DEFAULT_WARNING_THRESHOLD = 0.80
_CRITICAL_THRESHOLD = 0.95

# Order matters: the first match wins (llama3.x before plain llama3).
_KNOWN_LIMITS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"gemini", re.IGNORECASE), 1_000_000),
    (re.compile(r"claude-3", re.IGNORECASE), 200_000),
    (re.compile(r"gpt-4o|(?<![a-z0-9])o[13](?![0-9])", re.IGNORECASE), 128_000),
    (re.compile(r"llama-?3\.\d", re.IGNORECASE), 128_000),
    (re.compile(r"llama-?3", re.IGNORECASE), 8_192),
    (re.compile(r"deepseek", re.IGNORECASE), 64_000),
    (re.compile(r"qwen2\.5", re.IGNORECASE), 32_768),
    (re.compile(r"mistral", re.IGNORECASE), 32_768),
)


def known_limit(model_name: str) -> int | None:
    """The window the known-model table gives ``model_name``, or None when no pattern matches."""
    for pattern, limit in _KNOWN_LIMITS:
        if pattern.search(model_name or ""):
            return limit
    return None


def get_model_context_limit(model_name: str, environ: Mapping[str, str] | None = None) -> int:
    """The context window (tokens) to assume for ``model_name``."""
    env = os.environ if environ is None else environ
    raw = env.get(CONTEXT_LIMIT_ENV)
    if raw:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ConfigError(
                f"{CONTEXT_LIMIT_ENV}={raw!r} is not an integer token count", key=CONTEXT_LIMIT_ENV
            ) from None
        return max(_MIN_LIMIT, value)
    limit = known_limit(model_name)
    return _DEFAULT_FALLBACK_LIMIT if limit is None else limit


def estimate_text_tokens(text: str) -> int:
    """A cheap token estimate: ``max(1, len(text) // 4)``."""
    return max(1, len(text) // 4)


def _turn_text(turn: Any) -> str:
    if isinstance(turn, str):
        return turn
    if isinstance(turn, Mapping):
        content = turn.get("content")
        if isinstance(content, str):
            return content
        return json.dumps(content if content is not None else dict(turn), default=str)
    return str(turn)


def _warning_threshold(env: Mapping[str, str]) -> float:
    raw = env.get(WARNING_THRESHOLD_ENV)
    if not raw:
        return _DEFAULT_WARNING_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(
            f"{WARNING_THRESHOLD_ENV}={raw!r} is not a number between 0 and 1",
            key=WARNING_THRESHOLD_ENV,
        ) from None
    if not 0 < value <= 1:
        raise ConfigError(
            f"{WARNING_THRESHOLD_ENV}={raw!r} must be between 0 and 1 (e.g. 0.80)",
            key=WARNING_THRESHOLD_ENV,
        )
    return value


@dataclass(frozen=True)
class ContextAdvisorReport:
    """How full the context window is, and what to do about it."""

    estimated_tokens: int
    context_limit: int
    usage_percent: float
    is_warning: bool
    is_critical: bool
    warning_threshold: float
    advice_message: str


def evaluate_session_context(
    turns: Sequence[Any],
    model_name: str,
    *,
    last_turn_tokens: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> ContextAdvisorReport:
    """Report how much of ``model_name``'s window ``turns`` uses.

    ``turns`` are messages (dicts with ``content``) or strings.
    ``last_turn_tokens`` — the provider's reported input tokens of the last
    call — replaces the estimate when it is larger (it is the true count).
    """
    env = os.environ if environ is None else environ
    limit = get_model_context_limit(model_name, env)
    threshold = _warning_threshold(env)
    estimated = sum(estimate_text_tokens(_turn_text(t)) for t in turns) if turns else 0
    if last_turn_tokens is not None and last_turn_tokens > estimated:
        estimated = last_turn_tokens
    ratio = estimated / limit
    critical = ratio >= _CRITICAL_THRESHOLD
    warning = ratio >= threshold
    percent = round(ratio * 100, 1)
    if critical:
        advice = (
            f"Context is {percent}% full ({estimated}/{limit} tokens): compact now "
            "(/compact) or start a new session."
        )
    elif warning:
        advice = f"Context is {percent}% full ({estimated}/{limit} tokens): consider /compact soon."
    else:
        advice = f"Context is {percent}% full ({estimated}/{limit} tokens)."
    return ContextAdvisorReport(
        estimated_tokens=estimated,
        context_limit=limit,
        usage_percent=percent,
        is_warning=warning,
        is_critical=critical,
        warning_threshold=threshold,
        advice_message=advice,
    )


__all__ = [
    "CONTEXT_LIMIT_ENV",
    "WARNING_THRESHOLD_ENV",
    "ContextAdvisorReport",
    "estimate_text_tokens",
    "evaluate_session_context",
    "get_model_context_limit",
    "known_limit",
]
