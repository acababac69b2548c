"""The installed entry points resolve through the kernel's plugin manager.

Each tool's package declares its risk twice — on the ToolSpec and on the
tool's own metadata — and they must agree (the permission modes read the
metadata, so a third-party tool is classified by its own package).
"""

from __future__ import annotations

import pytest

from avo.plugins.manager import PluginManager
from avo.testing.tools import check_tool_spec
from avo_tools.plugin import SPECS


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    return PluginManager(environ={}, allow=[f"tool:{name}" for name in SPECS])


@pytest.mark.parametrize("name", sorted(SPECS))
def test_entry_point_resolves_to_the_spec(manager: PluginManager, name: str) -> None:
    registration = manager.registration("tool", name)
    assert registration.spec.name == name
    tool = check_tool_spec(registration.spec)
    assert tool.metadata.risk is registration.spec.risk
