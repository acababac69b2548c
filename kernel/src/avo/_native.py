"""Lazy loader for the optional ``avo_native`` Rust extension.

Importing this module is always safe: the extension is tried once, and an
``ImportError`` is captured (see :func:`import_error`), never raised. Setting
``AVO_NATIVE=0`` (or ``off``/``false``/``no``) in the environment before avo
is imported keeps the extension unloaded, so the kernel runs its pure-Python
code only (the test command runs the kernel suite that way once).

Every accelerated function has a pure-Python twin in the module that calls
it, and the twin is the authority: a native function returns ``None`` for a
value it leaves to Python, and the caller then runs the twin. Semantics never
depend on :func:`is_available`; only speed does. Which functions are used is
listed in :data:`ACCELERATED` (the benchmark ``benchmarks/native.py`` shows
why each one earns its place).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

ENV_SWITCH = "AVO_NATIVE"
"""Environment variable that turns the extension off (``0``/``off``/``false``/``no``)."""

ACCELERATED: tuple[str, ...] = (
    "cache_key_hash",
    "canonical_json",
    "canonical_fingerprint",
    "sha256_hex",
    "tool_result_fingerprint",
    "joined_strings",
)
"""The extension's functions the kernel calls (each has a pure-Python twin)."""

_OFF_VALUES = frozenset({"0", "off", "false", "no"})

_ext: Any = None
_cache_key_hash: Callable[[str, int, list[str]], str] | None = None
_ext_version: str | None = None
_import_error: BaseException | None = None
_disabled = False

_NOT_LOADED = "avo_native extension is not loaded"


def _try_load() -> None:
    global _ext, _cache_key_hash, _ext_version, _import_error, _disabled
    _ext = _cache_key_hash = _ext_version = None
    _disabled = os.environ.get(ENV_SWITCH, "").strip().lower() in _OFF_VALUES
    if _disabled:
        _import_error = ImportError(
            f"avo_native is turned off by {ENV_SWITCH}={os.environ[ENV_SWITCH]}; "
            f"unset {ENV_SWITCH} to use it"
        )
        return
    try:
        ext = importlib.import_module("avo_native")
        cache_key_hash = ext.cache_key_hash
        raw_version = getattr(ext, "version", None)
        _ext_version = str(raw_version() if callable(raw_version) else raw_version)
    except ImportError as exc:
        _import_error = exc
    except AttributeError as exc:  # an avo_native that lacks the expected function
        _ext_version = None
        _import_error = ImportError(f"avo_native is missing an expected attribute: {exc}")
    else:
        _ext, _cache_key_hash, _import_error = ext, cache_key_hash, None


def is_available() -> bool:
    """True when the ``avo_native`` extension was imported."""
    return _cache_key_hash is not None


def is_disabled() -> bool:
    """True when ``AVO_NATIVE`` turned the extension off."""
    return _disabled


def version() -> str | None:
    """The bundled extension's version, or None when it is not loaded."""
    return _ext_version


def import_error() -> BaseException | None:
    """Why the extension could not be imported (None when it loaded)."""
    return _import_error


def function(name: str) -> Callable[..., Any] | None:
    """The extension's ``name`` when it is loaded and has it, else None.

    Modules bind what this returns once, at import, and fall back to their
    pure-Python twin when it is None or when it returns None for a value.
    """
    if _ext is None or name not in ACCELERATED:
        return None
    found = getattr(_ext, name, None)
    return found if callable(found) else None


def functions() -> list[str]:
    """The accelerated functions the loaded extension provides (empty when not loaded)."""
    return [name for name in ACCELERATED if function(name) is not None]


def cache_key_hash_native(run_id: str, step: int, messages_json: list[str]) -> str:
    """Hex SHA-256 digest of a request, computed by the extension.

    Raises ``RuntimeError("avo_native extension is not loaded")`` when absent.
    """
    if _cache_key_hash is None:
        raise RuntimeError(_NOT_LOADED)
    return _cache_key_hash(run_id, step, messages_json)


def __getattr__(name: str) -> Any:
    if name == "cache_key_hash":
        if _cache_key_hash is None:
            raise AttributeError(f"{name}: {_NOT_LOADED}")
        return _cache_key_hash
    raise AttributeError(f"module 'avo._native' has no attribute {name!r}")


_try_load()

__all__ = [
    "ACCELERATED",
    "ENV_SWITCH",
    "cache_key_hash_native",
    "function",
    "functions",
    "import_error",
    "is_available",
    "is_disabled",
    "version",
]
