"""Compare the plugin set a run recorded with what a manager has now (resume's check)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from avo.plugins._records import _major
from avo.plugins.discovery import canonical_name

if TYPE_CHECKING:
    from avo.plugins.manager import PluginManager


def plugin_set_differences(
    manager: PluginManager, recorded: Iterable[Mapping[str, Any]]
) -> list[str]:
    """See :meth:`PluginManager.check_plugin_set`."""
    differences: list[str] = []
    for item in recorded:
        kind, name = str(item.get("kind")), str(item.get("name"))
        package, version = item.get("package"), item.get("version")
        was = f"{package} {version}" if package else "an in-process plugin"
        reg = manager._registrations.get((kind, name))
        now_package, now_version = (reg.package, reg.version) if reg else (None, None)
        if reg is None:
            candidates = manager.discover().get((kind, name))
            if (kind, name) in manager._excluded:
                reason = manager._excluded[(kind, name)][1]
                differences.append(f"{kind} {name!r} ({was}) is disabled now: {reason}")
                continue
            if not candidates or (kind, name) in manager._problems:
                differences.append(f"{kind} {name!r} ({was}) is no longer available")
                continue
            now_package, now_version = candidates[0].package, candidates[0].version
        if package and now_package and canonical_name(str(package)) != canonical_name(now_package):
            differences.append(
                f"{kind} {name!r} came from {was} but now comes from {now_package} {now_version}"
            )
        elif package and _major(str(version)) != _major(now_version):
            differences.append(
                f"{kind} {name!r} changed major version: {package} {version} -> "
                f"{now_package} {now_version}"
            )
    return differences


__all__ = ["plugin_set_differences"]
