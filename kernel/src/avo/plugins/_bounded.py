"""Run plugin code (an import, a registration hook) with a deadline.

Python cannot interrupt an import, so the code runs in a daemon thread and the
caller stops waiting at the deadline: the plugin is reported broken and
skipped, the thread is left to finish (or not) on its own, and the process
still exits normally. The default deadline comes from
``AVO_PLUGINS_LOAD_TIMEOUT`` (seconds; default :data:`DEFAULT_LOAD_TIMEOUT`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from avo.exceptions import ConfigError, PluginError

T = TypeVar("T")

DEFAULT_LOAD_TIMEOUT = 10.0
"""Seconds a plugin's import plus its registration hooks may take."""

LOAD_TIMEOUT_ENV = "AVO_PLUGINS_LOAD_TIMEOUT"


class LoadTimeout(PluginError):
    """Plugin code did not finish within the deadline (becomes a PluginProblem)."""


def load_timeout(environ: Mapping[str, str], default: float | None = None) -> float:
    """The deadline in seconds: ``AVO_PLUGINS_LOAD_TIMEOUT``, else ``default``, else 10."""
    raw = environ.get(LOAD_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LOAD_TIMEOUT if default is None else default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(
            f"{LOAD_TIMEOUT_ENV}={raw!r} is not a positive number of seconds; "
            f"set it to e.g. {DEFAULT_LOAD_TIMEOUT:g}",
            key=LOAD_TIMEOUT_ENV,
        )
    return value


def call_bounded(fn: Callable[[], T], timeout: float, *, label: str) -> T:
    """``fn()`` or its exception; :class:`LoadTimeout` once ``timeout`` seconds pass."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=work, name=f"avo-plugin-load:{label}", daemon=True)
    thread.start()
    if not done.wait(timeout):
        raise LoadTimeout(label)
    if "error" in outcome:
        raise outcome["error"]
    result: T = outcome["value"]
    return result


__all__ = [
    "DEFAULT_LOAD_TIMEOUT",
    "LOAD_TIMEOUT_ENV",
    "LoadTimeout",
    "call_bounded",
    "load_timeout",
]
