"""Lazy loader for the optional ``avo_native`` Rust extension.

Importing this module is always safe: the extension is tried once, and an
``ImportError`` is captured (see :func:`import_error`), never raised. The
extension only speeds up the prompt-cache-key digest; every caller keeps a
pure-Python path that produces identical results, so semantics never depend
on :func:`is_available`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

_cache_key_hash: Callable[[str, int, list[str]], str] | None = None
_ext_version: str | None = None
_import_error: BaseException | None = None

_NOT_LOADED = "avo_native extension is not loaded"


def _try_load() -> None:
    global _cache_key_hash, _ext_version, _import_error
    try:
        ext = importlib.import_module("avo_native")
        _cache_key_hash = ext.cache_key_hash
        raw_version = getattr(ext, "version", None)
        _ext_version = str(raw_version() if callable(raw_version) else raw_version)
    except ImportError as exc:
        _cache_key_hash = None
        _ext_version = None
        _import_error = exc
    except AttributeError as exc:  # an avo_native that lacks the expected function
        _cache_key_hash = None
        _ext_version = None
        _import_error = ImportError(f"avo_native is missing an expected attribute: {exc}")
    else:
        _import_error = None


def is_available() -> bool:
    """True when the ``avo_native`` extension was imported."""
    return _cache_key_hash is not None


def version() -> str | None:
    """The bundled extension's version, or None when it is not loaded."""
    return _ext_version


def import_error() -> BaseException | None:
    """Why the extension could not be imported (None when it loaded)."""
    return _import_error


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

__all__ = ["cache_key_hash_native", "import_error", "is_available", "version"]
