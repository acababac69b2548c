"""Installed-looking plugin distributions without pip, for discovery tests.

:func:`write_distribution` writes a ``<name>-<version>.dist-info`` directory
(``METADATA`` + ``entry_points.txt``) and the plugin's modules under a root
directory. Point a :class:`~avo.plugins.manager.PluginManager` at it with
``PluginManager(path=[str(root)])`` and put the root on ``sys.path`` (e.g.
``monkeypatch.syspath_prepend(root)``) so its modules import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avo.plugins.manager import PluginManager


def write_distribution(
    root: Path,
    name: str,
    version: str = "1.0.0",
    *,
    entry_points: Mapping[str, Mapping[str, str]],
    modules: Mapping[str, str] | None = None,
    requires: Iterable[str] = ("avo-kernel>=1.0,<2",),
) -> Path:
    """Write a distribution ``name`` with ``entry_points`` {group: {name: value}}.

    ``modules`` maps a module name (``"my_plugin"`` or ``"pkg.mod"``) to its
    source. ``requires`` become ``Requires-Dist`` lines. Returns the dist-info path.
    """
    root.mkdir(parents=True, exist_ok=True)
    dist_info = root / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    dist_info.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {requirement}" for requirement in requires]
    (dist_info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sections = []
    for group, entries in entry_points.items():
        body = "\n".join(f"{ep_name} = {value}" for ep_name, value in entries.items())
        sections.append(f"[{group}]\n{body}\n")
    (dist_info / "entry_points.txt").write_text("\n".join(sections), encoding="utf-8")
    for module, source in (modules or {}).items():
        parts = module.split(".")
        target = root.joinpath(*parts[:-1])
        target.mkdir(parents=True, exist_ok=True)
        for depth in range(1, len(parts)):
            init = root.joinpath(*parts[:depth], "__init__.py")
            if not init.exists():
                init.write_text("", encoding="utf-8")
        (target / f"{parts[-1]}.py").write_text(source, encoding="utf-8")
    return dist_info


def plugin_manager(*plugins: object, environ: Mapping[str, str] | None = None) -> PluginManager:
    """A fresh :class:`~avo.plugins.manager.PluginManager` that sees only ``plugins``.

    Autoloading is off (nothing installed leaks in); each plugin object (e.g.
    built with :func:`avo.plugins.provides`) is registered in-process.
    """
    from avo.plugins.manager import PluginManager

    manager = PluginManager(environ=environ or {}, autoload=False)
    for index, plugin in enumerate(plugins):
        manager.register(plugin, name=f"test-plugin-{index}")
    return manager


__all__ = ["plugin_manager", "write_distribution"]
