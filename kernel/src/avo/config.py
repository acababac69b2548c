"""Generic configuration from the environment.

Provider construction from ``AVO_PROVIDER``/``AVO_MODEL`` lives in the
providers plugin (it knows the vendors); the kernel keeps what every
composition needs: runtime policy overrides and the database path.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from avo.exceptions import ConfigError

_INT_OVERRIDES = {
    "AVO_MAX_TOTAL_TOKENS": "max_total_tokens",
    "AVO_REPEATED_ACTION_LIMIT": "repeated_action_limit",
}
_FLOAT_OVERRIDES = {"AVO_MAX_RUNTIME_SECONDS": "max_runtime_seconds"}


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def apply_runtime_overrides(
    policy_kwargs: dict[str, Any],
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Return ``policy_kwargs`` with the ``AVO_*`` policy overrides applied.

    ``AVO_MAX_TOTAL_TOKENS`` (int) -> ``max_total_tokens``,
    ``AVO_MAX_RUNTIME_SECONDS`` (float) -> ``max_runtime_seconds``,
    ``AVO_REPEATED_ACTION_LIMIT`` (int) -> ``repeated_action_limit``. Unset or
    empty variables change nothing; a value that is not a positive number
    raises :class:`ConfigError` naming the variable. The input is not mutated.
    """
    env = _env(environ)
    result = dict(policy_kwargs)
    for variable, key in _INT_OVERRIDES.items():
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(
                f"{variable} must be a positive integer, got {raw!r}", key=variable
            ) from None
        if value <= 0:
            raise ConfigError(f"{variable} must be a positive integer, got {raw!r}", key=variable)
        result[key] = value
    for variable, key in _FLOAT_OVERRIDES.items():
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        try:
            number = float(raw)
        except ValueError:
            raise ConfigError(
                f"{variable} must be a positive number of seconds, got {raw!r}", key=variable
            ) from None
        if not math.isfinite(number) or number <= 0:
            raise ConfigError(
                f"{variable} must be a positive number of seconds, got {raw!r}", key=variable
            )
        result[key] = number
    return result


DEFAULT_DATABASE = "avo.db"
"""The event store used when nothing names one: the embedded SQLite file."""


def database_path_from_env(environ: Mapping[str, str] | None = None) -> Path | None:
    """``AVO_DATABASE_PATH`` as a path (``~`` expanded), or None when unset or empty."""
    raw = _env(environ).get("AVO_DATABASE_PATH", "").strip()
    return Path(raw).expanduser() if raw else None


def database_location(environ: Mapping[str, str] | None = None) -> str:
    """Where the store lives when no flag or config names it: ``AVO_DATABASE_PATH``, else avo.db."""
    return str(database_path_from_env(environ) or DEFAULT_DATABASE)


__all__ = [
    "DEFAULT_DATABASE",
    "apply_runtime_overrides",
    "database_location",
    "database_path_from_env",
]
