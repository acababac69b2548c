"""What a run records about how it was composed, and how to compose it again from that.

:func:`composition_record` is stored in the run's first event (``RUN_CREATED``
payload key ``composition``): the resolved configuration tables (provider,
tools, store, permission, hooks, notifiers, policy, budget, ...), the
workspace directory the tools were bound to and the kernel version. Settings
under secret-looking keys (``api_key``, ``token``, ``password``, ...) are left
out and listed under ``secrets_from_environment``; a password inside a URL is
masked. Resuming composes the same runtime from the record with secrets read
from the environment again (:mod:`avo.ops.resume`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from avo.redaction import MASK, is_secret_key

RECORD_KEY = "composition"
"""The ``RUN_CREATED`` payload key holding the record."""

_URL_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]+:)([^@/\s]+)(@)")


def _scrub(value: Any, path: str, removed: list[str]) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            dotted = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and is_secret_key(key) and item not in (None, ""):
                removed.append(dotted)
                continue
            out[str(key)] = _scrub(item, dotted, removed)
        return out
    if isinstance(value, list | tuple):
        return [_scrub(item, f"{path}[{i}]", removed) for i, item in enumerate(value)]
    if isinstance(value, str):
        return _URL_PASSWORD.sub(r"\1" + MASK + r"\3", value)
    return value


def composition_record(
    raw: Mapping[str, Any], *, workspace: str | None, kernel_version: str | None = None
) -> dict[str, Any]:
    """The JSON-ready record of a resolved config (secrets left out)."""
    removed: list[str] = []
    config = _scrub(dict(raw), "", removed)
    record: dict[str, Any] = {"config": config, "workspace": workspace}
    if kernel_version:
        record["kernel_version"] = kernel_version
    if removed:
        record["secrets_from_environment"] = sorted(removed)
    return record


def recorded_composition(first_event_payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The record stored in a run's ``RUN_CREATED`` payload, or None (a Python-built run)."""
    record = first_event_payload.get(RECORD_KEY)
    if not isinstance(record, Mapping) or not isinstance(record.get("config"), Mapping):
        return None
    return dict(record)


__all__ = ["RECORD_KEY", "composition_record", "recorded_composition"]
