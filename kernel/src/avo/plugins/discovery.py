"""Entry-point discovery: read plugin metadata without importing plugin code.

Everything here works from distribution metadata alone (``entry_points.txt``
and ``METADATA``): which plugins exist, which package ships them, and which
kernel versions they declare they work with. Importing a plugin's module is
the plugin manager's job and happens only when a name is first used.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib import metadata

KERNEL_DISTRIBUTION = "avo-kernel"
"""The kernel's distribution name; plugins declare a requirement on it."""

_GROUPS = {
    "avo.providers": "provider",
    "avo.tools": "tool",
    "avo.stores": "store",
    "avo.notifiers": "notifier",
    "avo.hooks": "hook",
    "avo.permissions": "permission",
    "avo.sandboxes": "sandbox",
    "avo.commands": "command",
    "avo.shapers": "shaper",
    "avo.bundles": "bundle",
    "avo.slash_commands": "slash_command",
    "avo.memory": "memory",
    "avo.engines": "engine",
}


def kind_of_group(group: str) -> str:
    """The plugin kind an entry-point group holds (``"avo.tools"`` -> ``"tool"``)."""
    return _GROUPS[group]


def canonical_name(name: str) -> str:
    """PEP 503 normalised distribution name (``Avo_Tools`` -> ``avo-tools``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class PluginEntry:
    """One entry point of an avo plugin group, read from metadata.

    ``factory()`` imports the entry point's module and returns the plugin
    object; nothing is imported until it is called.
    """

    group: str
    name: str
    factory: Callable[[], Any]
    package: str | None = None
    version: str | None = None
    value: str = ""
    kernel_requirement: str | None = None
    dist_path: str | None = field(default=None, compare=False)

    @property
    def kind(self) -> str:
        """The plugin kind (``provider``, ``tool``, ...)."""
        return kind_of_group(self.group)


def _kernel_requirement(dist: metadata.Distribution) -> str | None:
    """The ``avo-kernel`` version specifier a distribution declares, if any."""
    for line in dist.requires or ():
        requirement, _, marker = line.partition(";")
        if "extra" in marker:
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)", requirement)
        if match and canonical_name(match.group(1)) == KERNEL_DISTRIBUTION:
            return match.group(2).strip().strip("()").strip()
    return None


def _iter_entries(
    groups: Iterable[str], path: Sequence[str] | None = None
) -> Iterable[PluginEntry]:
    from importlib import metadata

    wanted = set(groups)
    seen: set[str] = set()
    if path is not None:
        found = metadata.distributions(path=list(path))
    else:
        found = metadata.distributions()
    for dist in found:
        # Cheap pre-filter: most installed distributions have no avo entry
        # points, and parsing their METADATA is what makes discovery slow.
        text = dist.read_text("entry_points.txt")
        if not text or "[avo." not in text:
            continue
        dist_name = dist.metadata["Name"] if dist.metadata else None
        if not dist_name:
            continue
        key = canonical_name(dist_name)
        if key in seen:  # the first distribution on the path wins, as for imports
            continue
        seen.add(key)
        eps = [ep for ep in dist.entry_points if ep.group in wanted]
        if not eps:
            continue
        requirement = _kernel_requirement(dist) if key != KERNEL_DISTRIBUTION else None
        dist_path = str(getattr(dist, "_path", "")) or None
        for ep in eps:
            yield PluginEntry(
                group=ep.group,
                name=ep.name,
                factory=ep.load,
                package=dist_name,
                version=dist.version,
                value=ep.value,
                kernel_requirement=requirement,
                dist_path=dist_path,
            )


def discover(
    group: str, *, package: str | None = None, path: Sequence[str] | None = None
) -> list[PluginEntry]:
    """Every entry point in ``group``, optionally only those ``package`` ships.

    Reads metadata only; sorted by name then package.
    """
    if group not in _GROUPS:
        known = ", ".join(sorted(_GROUPS))
        raise ValueError(f"unknown plugin group {group!r}; known groups: {known}")
    entries = [
        entry
        for entry in _iter_entries((group,), path)
        if package is None or canonical_name(entry.package or "") == canonical_name(package)
    ]
    return sorted(entries, key=lambda e: (e.name, e.package or ""))


def discover_all(
    *,
    groups: Iterable[str] | None = None,
    path: Sequence[str] | None = None,
    cache_file: Path | None = None,
) -> dict[str, list[PluginEntry]]:
    """Entry points of every avo group (or ``groups``), keyed by group.

    With ``cache_file`` the entry points are read from a cache that is valid
    while no directory on the path and no plugin's dist-info changed (see
    :func:`read_entry_cache`), so a warm CLI start never imports
    ``importlib.metadata``.
    """
    selected = tuple(groups) if groups is not None else tuple(_GROUPS)
    for group in selected:
        if group not in _GROUPS:
            raise ValueError(f"unknown plugin group {group!r}")
    found = read_entry_cache(cache_file, path) if cache_file is not None else None
    if found is None:
        found = list(_iter_entries(tuple(_GROUPS), path))
        if cache_file is not None:
            write_entry_cache(cache_file, path, found)
    result: dict[str, list[PluginEntry]] = {group: [] for group in selected}
    for entry in found:
        if entry.group in result:
            result[entry.group].append(entry)
    for entries in result.values():
        entries.sort(key=lambda e: (e.name, e.package or ""))
    return result


# ------------------------------------------------------------ entry-point cache

_OFF = {"0", "off", "false", "no"}


def cache_dir(environ: Mapping[str, str]) -> Path | None:
    """avo's cache directory: ``AVO_PLUGINS_CACHE`` (``0``/``off`` disables),
    else ``$XDG_CACHE_HOME/avo``, else ``$HOME/.cache/avo``; None without any."""
    configured = environ.get("AVO_PLUGINS_CACHE", "").strip()
    if configured.lower() in _OFF:
        return None
    if configured:
        return Path(configured).expanduser()
    base = environ.get("XDG_CACHE_HOME", "").strip()
    home = environ.get("HOME", "").strip()
    if not base and not home:  # an environment without a home (tests) gets no cache
        return None
    return (Path(base) if base else Path(home) / ".cache") / "avo"


def _mtime(path: str | Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _path_key(path: Sequence[str] | None) -> list[Any]:
    entries = list(path) if path is not None else list(sys.path)
    return [sys.executable, [[p, _mtime(p or ".")] for p in entries]]


def load_entry_point(value: str) -> Any:
    """Import ``module:attr.path`` (what ``EntryPoint.load`` does), for cached entries."""
    target = value.split("[", 1)[0].strip()
    module_name, _, attributes = target.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for attribute in filter(None, attributes.strip().split(".")):
        obj = getattr(obj, attribute)
    return obj


def read_entry_cache(cache_file: Path, path: Sequence[str] | None) -> list[PluginEntry] | None:
    """Cached entries when every path directory and plugin dist-info is unchanged."""
    try:
        data = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != _path_key(path):
        return None
    dists = data.get("dists", {})
    for dist_path, stamp in dists.items():
        if stamp != [_mtime(dist_path), _mtime(Path(dist_path) / "entry_points.txt")]:
            return None
    entries = []
    for item in data.get("entries", []):
        entries.append(
            PluginEntry(
                group=item["group"],
                name=item["name"],
                factory=partial(load_entry_point, item["value"]),
                package=item["package"],
                version=item["version"],
                value=item["value"],
                kernel_requirement=item["kernel_requirement"],
                dist_path=item["dist_path"],
            )
        )
    return entries


def write_entry_cache(
    cache_file: Path, path: Sequence[str] | None, entries: list[PluginEntry]
) -> None:
    """Store ``entries`` with the stamps :func:`read_entry_cache` checks (best effort)."""
    dists = {
        e.dist_path: [_mtime(e.dist_path), _mtime(Path(e.dist_path) / "entry_points.txt")]
        for e in entries
        if e.dist_path
    }
    data = {
        "key": _path_key(path),
        "dists": dists,
        "entries": [
            {
                "group": e.group,
                "name": e.name,
                "value": e.value,
                "package": e.package,
                "version": e.version,
                "kernel_requirement": e.kernel_requirement,
                "dist_path": e.dist_path,
            }
            for e in entries
        ],
    }
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        scratch = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.tmp")
        scratch.write_text(json.dumps(data), encoding="utf-8")
        scratch.replace(cache_file)
    except OSError:  # a read-only home only costs speed
        pass


def names(group: str, *, package: str | None = None) -> list[str]:
    """The sorted, de-duplicated names registered in ``group``."""
    return sorted({entry.name for entry in discover(group, package=package)})


# ------------------------------------------------------------ version checks


def _release(version: str) -> tuple[int, ...]:
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    if not match:
        raise ValueError(f"cannot read version {version!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    width = max(len(a), len(b))
    a = a + (0,) * (width - len(a))
    b = b + (0,) * (width - len(b))
    return (a > b) - (a < b)


def _clause_holds(clause: str, version: tuple[int, ...]) -> bool:
    match = re.fullmatch(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*([^\s]+)\s*", clause)
    if not match:
        raise ValueError(f"cannot read version clause {clause!r}")
    op, target = match.groups()
    if op in ("==", "!=") and target.endswith(".*"):
        prefix = _release(target[:-2])
        equal = version[: len(prefix)] + (0,) * (len(prefix) - len(version)) == prefix
        return equal if op == "==" else not equal
    wanted = _release(target)
    order = _cmp(version, wanted)
    if op == "~=":
        upper = (*wanted[:-2], wanted[-2] + 1) if len(wanted) > 1 else (wanted[0] + 1,)
        return order >= 0 and _cmp(version, upper) < 0
    return {
        "==": order == 0,
        "===": order == 0,
        "!=": order != 0,
        "<=": order <= 0,
        ">=": order >= 0,
        "<": order < 0,
        ">": order > 0,
    }[op]


def requirement_allows(specifier: str, version: str) -> bool:
    """Whether ``version`` satisfies a PEP 440 specifier like ``>=1.0,<2``.

    Handles the release-segment comparisons plugin requirements use; an empty
    specifier allows every version. Raises ``ValueError`` for what it cannot read.
    """
    release = _release(version)
    clauses = [c for c in specifier.split(",") if c.strip()]
    return all(_clause_holds(clause, release) for clause in clauses)


__all__ = [
    "KERNEL_DISTRIBUTION",
    "PluginEntry",
    "cache_dir",
    "canonical_name",
    "discover",
    "discover_all",
    "kind_of_group",
    "load_entry_point",
    "names",
    "read_entry_cache",
    "requirement_allows",
    "write_entry_cache",
]
