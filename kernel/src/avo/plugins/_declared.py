"""A plugin provides only the names its package declares; the status rows of a manager."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from avo.plugins import GROUP_OF_KIND
from avo.plugins._records import PluginProblem, Registration, _status_of
from avo.plugins.discovery import PluginEntry, canonical_name, requirement_allows
from avo.plugins.specs import PLUGIN_API_VERSION

if TYPE_CHECKING:
    from avo.plugins.manager import PluginManager


def undeclared(
    manager: PluginManager, collected: list[Registration], package: str | None
) -> str | None:
    """Why a plugin from ``package`` registering ``collected`` is refused, or None."""
    declared = manager._declared.get(canonical_name(package or ""), set())
    extra = sorted({(r.kind, r.name) for r in collected} - declared)
    if not extra:
        return None
    names = ", ".join(f"{kind} {name!r}" for kind, name in extra)
    groups = sorted({GROUP_OF_KIND[kind] for kind, _ in extra})
    return (
        f"registers {names}, which {package} does not declare as an entry point; a "
        f"plugin may only provide the names its package declares (add them under "
        f"{', '.join(groups)} in its pyproject.toml, or remove them)"
    )


def metadata_problem(
    key: tuple[str, str], candidates: list[PluginEntry], kernel_version: str
) -> PluginProblem | None:
    """What metadata alone says is wrong with ``key``: two packages, or a kernel mismatch."""
    kind, name = key
    packages = sorted({c.package or "?" for c in candidates})
    if len(packages) > 1:
        ordered = sorted(candidates, key=lambda c: c.package or "")
        both = " and ".join(f"{c.package} {c.version}" for c in ordered)
        return PluginProblem(
            name,
            kind,
            ", ".join(packages),
            None,
            f"name conflict: {kind} {name!r} is registered by both {both}; "
            f"uninstall one or block it with AVO_PLUGINS_BLOCK",
        )
    entry = candidates[0]
    spec = entry.kernel_requirement
    if not spec:
        return None
    try:
        compatible = requirement_allows(spec, kernel_version)
    except ValueError as exc:
        reason = f"cannot read its avo-kernel requirement {spec!r}: {exc}"
        return PluginProblem(name, kind, entry.package, entry.version, reason)
    if compatible:
        return None
    return PluginProblem(
        name,
        kind,
        entry.package,
        entry.version,
        f"incompatible plugin API: it requires avo-kernel{spec}, but this kernel is "
        f"{kernel_version} (plugin API {PLUGIN_API_VERSION})",
    )


def may_register(manager: PluginManager, kind: str, name: str, package: str | None) -> bool:
    """Whether ``package``'s declared ``kind``/``name`` is enabled and not in conflict."""
    key = (kind, name)
    if key in manager._problems:
        return False
    wanted = canonical_name(package or "")
    return any(
        canonical_name(entry.package or "") == wanted for entry in manager.discover().get(key, ())
    )


def installed_holder(
    manager: PluginManager, key: tuple[str, str], package: str | None
) -> str | None:
    """``"package version"`` of an enabled plugin of another package declaring ``key``."""
    for entry in manager.discover().get(key, ()):
        if canonical_name(entry.package or "") != canonical_name(package or ""):
            return f"{entry.package} {entry.version or ''}".rstrip()
    return None


def status_rows(manager: PluginManager) -> list[dict[str, Any]]:
    """One row per plugin the manager knows: name, kind, package, version, status, reason."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, reg in manager._registrations.items():
        rows[key] = {**reg.as_dict(), "status": "ok", "reason": ""}
    for key, problem in manager._problems.items():
        rows[key] = {
            "name": problem.name,
            "kind": problem.kind,
            "package": problem.package,
            "version": problem.version,
            "status": _status_of(problem.reason),
            "reason": problem.reason,
        }
    for key, (entry, reason) in manager._excluded.items():
        rows.setdefault(
            key,
            {
                "name": entry.name,
                "kind": entry.kind,
                "package": entry.package,
                "version": entry.version,
                "status": "disabled",
                "reason": reason,
            },
        )
    listed = [rows[key] for key in sorted(rows)]
    for problem in manager._shadowed:  # third-party plugins clashing with a kernel-reserved name
        listed.append(
            {
                "name": problem.name,
                "kind": problem.kind,
                "package": problem.package,
                "version": problem.version,
                "status": "conflict",
                "reason": problem.reason,
            }
        )
    return listed


__all__ = ["installed_holder", "may_register", "metadata_problem", "status_rows", "undeclared"]
