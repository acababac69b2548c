"""Per-run bundles on Temporal: refused, by the submit and by the worker, with what to do.

A bundle (:mod:`avo.bundles`: ``[mcp]``, ``[skills]``, ``[instructions]``,
``[memory]``, ``[context]``'s compaction, ``bundles = [...]``) is set up by the
runtime at the start of every run and resume. On Temporal that would happen in
the workflow's deterministic code: an MCP server cannot start there (the
sandbox refuses the subprocess, the bundle records "did not start" and the run
goes on without its tools), files would be read again on every replay, and a
bundle's tools would replace the registry whose calls become ``avo.tool``
activities, so they would run inside the workflow. Until bundles are set up on
the workers (see docs/temporal.md, "Bundles"), the engine refuses them where
they are first seen: ``avo run --engine temporal`` before it submits (from its
own avo.toml) and ``avo worker --engine temporal`` before it polls (from the
runtime it composed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from avo.bundles import bundle_name
from avo.exceptions import BundleError

TABLES = ("mcp", "skills", "instructions", "memory")
"""Config tables that each enable the bundle of the same name."""


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
        "avo.toml) yet: a bundle is set up for each run, and on Temporal that setup would run "
        "in the workflow's deterministic code, where an MCP server cannot start and a "
        "bundle's tools do not reach the workers; run such runs in process (without --engine "
        f"temporal or [engine]), or remove {settings} from the avo.toml of the workers and of "
        "avo run --engine temporal",
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
        if enabled is not False:
            names.append(table)
    context = getattr(config, "context", None)
    if context is not None and getattr(context, "policy", None) == "compaction":
        names.append("compaction")
    for item in getattr(config, "bundles", None) or ():
        names.append(item if isinstance(item, str) else str(getattr(item, "name", item)))
    return names


def check_submission(resolved: Any) -> None:
    """Raise BundleError when the submitter's avo.toml enables a bundle (nothing is submitted)."""
    names = configured(resolved.config) if resolved is not None else []
    if names:
        raise refusal(names, "avo run --engine temporal")


def check_worker(runtime: Any) -> None:
    """Raise BundleError when the worker's composed runtime sets up bundles for its runs."""
    names = [bundle_name(bundle) for bundle in getattr(runtime, "bundles", ())]
    if names:
        raise refusal(names, "avo worker --engine temporal")


__all__ = ["TABLES", "check_submission", "check_worker", "configured", "refusal"]
