"""The values the plugin manager keeps: problems, registrations, and the observer relay."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from avo.plugins.discovery import KERNEL_DISTRIBUTION, canonical_name
from avo.plugins.specs import Spec

if TYPE_CHECKING:
    from avo.plugins.manager import PluginManager


@dataclass(frozen=True)
class PluginProblem:
    """A plugin that was refused or isolated, and why."""

    name: str
    kind: str
    package: str | None
    version: str | None
    reason: str

    def __str__(self) -> str:
        origin = f"{self.package} {self.version}" if self.package else "an in-process plugin"
        return f"{self.kind} plugin {self.name!r} from {origin}: {self.reason}"


@dataclass(frozen=True)
class Registration:
    """A spec a loaded plugin registered, and which distribution registered it."""

    kind: str
    name: str
    spec: Spec
    package: str | None
    version: str | None
    plugin: str

    def as_dict(self) -> dict[str, Any]:
        """``{"name", "kind", "package", "version"}`` (what a run records)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "package": self.package,
            "version": self.version,
        }


def _split(value: str | None) -> set[str]:
    return {part.strip() for part in (value or "").split(",") if part.strip()}


def _status_of(reason: str) -> str:
    if reason.startswith("name conflict"):
        return "conflict"
    if reason.startswith("incompatible plugin API"):
        return "incompatible"
    return "broken"


def _with_canonical(names: set[str]) -> set[str]:
    return names | {canonical_name(name) for name in names}


def _major(version: str | None) -> str | None:
    if not version:
        return None
    return version.strip().lstrip("v").split(".")[0]


def _kernel_version() -> str:
    version = getattr(sys.modules.get("avo"), "__version__", None)
    if isinstance(version, str):
        return version
    from importlib import metadata

    try:
        return metadata.version(KERNEL_DISTRIBUTION)
    except metadata.PackageNotFoundError:  # running from a source tree
        return "1.0.0"


class _SafeHookRelay:
    """Calls lifecycle hooks one implementation at a time, isolating failures."""

    def __init__(self, manager: PluginManager) -> None:
        self._manager = manager

    def __getattr__(self, hook_name: str) -> Callable[..., list[Any]]:
        def call(**kwargs: Any) -> list[Any]:
            return self.call(hook_name, kwargs)[0]

        return call

    def call(
        self, hook_name: str, kwargs: Mapping[str, Any]
    ) -> tuple[list[Any], list[PluginProblem]]:
        """Every implementation's result, and a problem for each one that raised."""
        caller = getattr(self._manager.pluggy.hook, hook_name)
        results: list[Any] = []
        faults: list[PluginProblem] = []
        for impl in reversed(caller.get_hookimpls()):
            if impl.hookwrapper or impl.wrapper:
                continue
            try:
                result = impl.function(*[kwargs[name] for name in impl.argnames])
            except Exception as exc:
                faults.append(self._manager._hook_failed(impl.plugin_name, hook_name, exc))
                continue
            if result is not None:
                results.append(result)
        return results, faults


__all__ = ["PluginProblem", "Registration"]
