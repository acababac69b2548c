"""Which per-run bundles the temporal engine takes, and the refusal of the others.

A run's bundles (:mod:`avo.bundles`) are set up on a worker and the workflow
gets what each contributes through an activity (:mod:`avo_temporal.run_bundles`).
Only tools and instructions can cross from a worker to the workflow: request
shapers and hooks are objects of the worker's process that the workflow's
deterministic code would have to call. So the engine takes the bundles whose
parts are tools and instructions (:data:`SUPPORTED`: ``[mcp]``, ``[skills]``,
``[instructions]``) and refuses the others (``[memory]``, ``[context]``'s
compaction, ``bundles = [...]``) where they are first seen: ``avo run
--engine temporal`` before it submits (from its own avo.toml) and ``avo
worker --engine temporal`` before it polls (from the runtime it composed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from avo.bundles import bundle_name
from avo.exceptions import BundleError

TABLES = ("mcp", "skills", "instructions", "memory")
"""Config tables that each enable the bundle of the same name."""

SUPPORTED = frozenset({"mcp", "skills", "instructions"})
"""Bundles whose parts are tools and instructions only: set up on the workers."""


def _where(name: str) -> str:
    """The avo.toml setting that enables bundle ``name``."""
    if name in TABLES:
        return f"[{name}]"
    if name == "compaction":
        return '[context] (policy = "none" turns it off)'
    return f"bundles = [{name!r}]"


def refusal(names: Iterable[str], who: str) -> BundleError:
    """The error naming the bundles ``who`` (a command) refuses, and what to do instead."""
    found = list(dict.fromkeys(names))
    quoted = ", ".join(repr(name) for name in found)
    settings = ", ".join(_where(name) for name in found)
    plural = "s" if len(found) > 1 else ""
    return BundleError(
        f"{who}: the temporal engine cannot set up bundle{plural} {quoted} ({settings} in "
        "avo.toml): a bundle's request shapers and hooks would have to run in the workflow's "
        "deterministic code, and only tools and instructions cross from the workers "
        f"(bundles {', '.join(sorted(SUPPORTED))} work); run such runs in process (without "
        f"--engine temporal or [engine]), or remove {settings} from the avo.toml of the workers "
        "and of avo run --engine temporal",
        plugin=found[0] if found else None,
    )


def configured(config: Any) -> list[str]:
    """The bundles an avo.toml (a composed config model) enables, as far as it says."""
    names = []
    for table in TABLES:
        settings = getattr(config, table, None)
        if settings is None:
            continue
        enabled = settings.get("enabled", True) if isinstance(settings, dict) else True
        if enabled is not False and getattr(settings, "enabled", True) is not False:
            names.append(table)
    context = getattr(config, "context", None)
    if context is not None and getattr(context, "policy", None) == "compaction":
        names.append("compaction")
    for item in getattr(config, "bundles", None) or ():
        names.append(item if isinstance(item, str) else str(getattr(item, "name", item)))
    return names


def check_submission(resolved: Any) -> None:
    """Raise BundleError when the submitter's avo.toml enables a bundle the engine refuses."""
    names = configured(resolved.config) if resolved is not None else []
    refused = [name for name in names if name not in SUPPORTED]
    if refused:
        raise refusal(refused, "avo run --engine temporal")


def check_worker(runtime: Any) -> None:
    """Raise BundleError when the worker's runtime sets up a bundle the engine refuses."""
    names = [bundle_name(bundle) for bundle in getattr(runtime, "bundles", ())]
    refused = [name for name in names if name not in SUPPORTED]
    if refused:
        raise refusal(refused, "avo worker --engine temporal")


__all__ = ["SUPPORTED", "TABLES", "check_submission", "check_worker", "configured", "refusal"]
