"""A cache of ``avo plugin list``'s load check, keyed on what could change it.

Checking whether a plugin loads means importing it, which dominates
``avo plugin list``'s run time. The result is cached in one JSON file and
reused only while its key matches: the interpreter, ``sys.path``, the kernel
version, the switches, and for every discovered entry point its value, its
distribution's name, version and dist-info mtime, and the mtime of the entry
point's module file (found on ``sys.path`` without importing it). Installing,
removing or upgrading a package, or editing a plugin's entry module,
therefore invalidates it; ``avo plugin list --refresh`` ignores it.

Location: ``plugin-status.json`` in avo's cache directory
(:func:`avo.plugins.discovery.cache_dir`: ``AVO_PLUGINS_CACHE``, ``0``/``off``
disables; else ``$XDG_CACHE_HOME/avo`` or ``$HOME/.cache/avo``; an environment
with neither variable gets no cache).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from avo.plugins.discovery import PluginEntry, cache_dir
from avo.plugins.manager import PluginManager

_VERSION = 1


def cache_path(environ: Mapping[str, str]) -> Path | None:
    """Where the cache lives (``plugin-status.json`` in avo's cache directory), or None."""
    directory = cache_dir(environ)
    return directory / "plugin-status.json" if directory else None


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _module_mtime(value: str, cache: dict[str, int]) -> int:
    module = value.split(":", 1)[0].strip()
    if module in cache:
        return cache[module]
    relative = os.path.join(*module.split("."))
    found = -1
    for base in sys.path:
        if not base:
            continue
        stem = os.path.join(base, relative)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            found = _mtime(candidate)
            if found != -1:
                break
        if found != -1:
            break
    cache[module] = found
    return found


def fingerprint(manager: PluginManager, entries: list[PluginEntry]) -> str:
    """The cache key (a JSON string): everything the load check's outcome depends on."""
    modules: dict[str, int] = {}
    parts: list[Any] = [
        _VERSION,
        sys.executable,
        sys.path,
        manager.kernel_version,
        manager.autoload,
        sorted(manager.block),
        sorted(manager.allow) if manager.allow is not None else None,
    ]
    for entry in sorted(entries, key=lambda e: (e.group, e.name, e.package or "")):
        dist = entry.dist_path
        dist_mtime = _mtime(dist) if dist else -1
        record_mtime = _mtime(os.path.join(dist, "RECORD")) if dist else -1
        parts.append(
            [
                entry.group,
                entry.name,
                entry.value,
                entry.package,
                entry.version,
                entry.kernel_requirement,
                dist_mtime,
                record_mtime,
                _module_mtime(entry.value, modules),
            ]
        )
    return json.dumps(parts, default=str)


def cached_status(
    manager: PluginManager, environ: Mapping[str, str], *, refresh: bool = False
) -> list[dict[str, Any]]:
    """``manager.status()``, from the cache when its key still matches."""
    path = cache_path(environ)
    if path is None:
        return manager.status()
    key = fingerprint(manager, manager.entries(include_disabled=True))
    if not refresh:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") == key and isinstance(data.get("rows"), list):
                return list(data["rows"])
        except (OSError, ValueError):
            pass
    rows = manager.status()
    if any(str(row.get("reason", "")).startswith("did not finish loading") for row in rows):
        return rows  # a slow import may be transient: check again next time
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        scratch.write_text(json.dumps({"key": key, "rows": rows}), encoding="utf-8")
        scratch.replace(path)
    except OSError:  # a read-only home only costs speed
        pass
    return rows


__all__ = ["cache_path", "cached_status", "fingerprint"]
