"""The ``avo plugin list`` status cache: reused while nothing relevant changed."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from avo.plugins.manager import PluginManager
from avo.plugins.status_cache import cache_path, cached_status
from avo.testing.plugins import write_distribution

SOURCE = """
from avo.plugins import ToolSpec, provides
plugin = provides(ToolSpec(name="cached", factory=lambda settings: None))
"""


def test_cache_location_from_environ(tmp_path: Path) -> None:
    assert cache_path({"AVO_PLUGINS_CACHE": "0"}) is None
    assert cache_path({"AVO_PLUGINS_CACHE": str(tmp_path)}) == tmp_path / "plugin-status.json"
    assert cache_path({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "avo" / "plugin-status.json"
    home = {"HOME": str(tmp_path)}
    assert cache_path(home) == tmp_path / ".cache" / "avo" / "plugin-status.json"
    assert cache_path({}) is None


def _installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A distribution ``avo-cached`` with one tool plugin in a fresh module, on sys.path."""
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    module = f"cached_{uuid.uuid4().hex[:8]}"
    write_distribution(
        site,
        "avo-cached",
        entry_points={"avo.tools": {"cached": f"{module}:plugin"}},
        modules={module: SOURCE},
    )
    return site, module


def test_cached_rows_are_reused_until_the_plugin_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, module = _installed_plugin(tmp_path, monkeypatch)
    env = {"AVO_PLUGINS_CACHE": str(tmp_path / "cache")}

    def rows() -> list[dict[str, object]]:
        return cached_status(PluginManager(environ=env, path=[str(site)]), env)

    first = rows()
    assert [(r["name"], r["status"]) for r in first] == [("cached", "ok")]
    assert module in sys.modules
    del sys.modules[module]
    assert rows() == first
    assert module not in sys.modules  # answered from the cache: nothing imported

    # a broken edit to the entry module invalidates the cache
    source = site / f"{module}.py"
    source.write_text("raise ImportError('edited')\n")
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))
    [row] = rows()
    assert row["status"] == "broken" and "edited" in str(row["reason"])
    refreshed = cached_status(PluginManager(environ=env, path=[str(site)]), env, refresh=True)
    assert refreshed == [row]


def test_disabled_cache_always_checks(tmp_path: Path) -> None:
    manager = PluginManager(environ={}, path=[str(tmp_path)])
    assert cached_status(manager, {"AVO_PLUGINS_CACHE": "off"}) == []


def test_entry_point_cache_is_used_until_the_path_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from avo.plugins.discovery import discover_all, read_entry_cache

    site, module = _installed_plugin(tmp_path, monkeypatch)
    cache = tmp_path / "entry-points.json"
    first = discover_all(path=[str(site)], cache_file=cache)["avo.tools"]
    assert [e.name for e in first] == ["cached"] and cache.exists()
    cached = read_entry_cache(cache, [str(site)])
    assert cached is not None and [e.value for e in cached] == [f"{module}:plugin"]
    assert cached[0].factory().specs[0].name == "cached"  # loads without importlib.metadata

    write_distribution(
        site, "avo-second", entry_points={"avo.tools": {"second": f"{module}:plugin"}}
    )
    os.utime(site, ns=(0, os.stat(site).st_mtime_ns + 10_000_000))
    assert read_entry_cache(cache, [str(site)]) is None
    names = [e.name for e in discover_all(path=[str(site)], cache_file=cache)["avo.tools"]]
    assert names == ["cached", "second"]
