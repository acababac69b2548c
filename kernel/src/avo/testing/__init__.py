"""The plugin-author kit: what a plugin's own tests use.

- :mod:`avo.testing.scripts` — scripted ``FakeProvider`` builders
  (:func:`tool_then_answer`, :func:`answer`, :func:`tool_call`, ...).
- :mod:`avo.testing.stores` — the EventStore conformance suite
  (:class:`EventStoreConformance`); every store plugin runs it against itself.
- :mod:`avo.testing.providers` — the provider conformance suite
  (:class:`ProviderConformance`) and :class:`ScriptedHTTPServer`, a real
  loopback HTTP server speaking a vendor's wire format.
- :mod:`avo.testing.tools` — the tool contract checker.
- :mod:`avo.testing.plugins` — :func:`write_distribution`, an installed-looking
  plugin distribution for discovery tests, and :func:`plugin_manager`.

Names are imported from their module on first use, so ``from avo.testing
import tool_then_answer`` does not import pytest or the HTTP server.
"""

from __future__ import annotations

import importlib
from typing import Any

_MODULES = ("scripts", "plugins", "stores", "providers", "tools")

_EXPORTS: dict[str, str] = {
    # scripts
    "always_calling": "scripts",
    "answer": "scripts",
    "failing_then_answer": "scripts",
    "minted_ids": "scripts",
    "parallel_calls": "scripts",
    "scripted": "scripts",
    "tool_call": "scripts",
    "tool_calls_then_answer": "scripts",
    "tool_then_answer": "scripts",
    # plugins
    "plugin_manager": "plugins",
    "write_distribution": "plugins",
    # stores
    "EventStoreConformance": "stores",
    # providers
    "ProviderConformance": "providers",
    "RecordedRequest": "providers",
    "ScriptedHTTPServer": "providers",
    "ScriptedResponse": "providers",
    "unused_loopback_url": "providers",
    # tools
    "ToolContractError": "tools",
    "check_metadata": "tools",
    "check_tool_contract": "tools",
    "check_tool_spec": "tools",
}


def __getattr__(name: str) -> Any:
    """Import ``name`` from the kit module that defines it."""
    module_name = _EXPORTS.get(name)
    candidates = [module_name] if module_name else list(_MODULES)
    for candidate in candidates:
        try:
            module = importlib.import_module(f"avo.testing.{candidate}")
        except ModuleNotFoundError as exc:
            if exc.name == f"avo.testing.{candidate}":
                continue
            raise
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module 'avo.testing' has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
