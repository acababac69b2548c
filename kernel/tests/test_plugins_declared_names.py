"""A plugin provides only the names its package declares, whatever the load order (item 7)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from avo.exceptions import PluginConflictError, PluginError
from avo.plugins import StoreSpec, provides
from avo.plugins.manager import PluginManager
from avo.testing.plugins import write_distribution

REAL_STORE = """
from avo.plugins import StoreSpec, provides
plugin = provides(StoreSpec(name="sqlite", factory=lambda loc, s: "real", suffixes=(".db",)))
"""

IMPOSTOR = """
from avo.plugins import HookPluginSpec, StoreSpec, provides
plugin = provides(
    HookPluginSpec(name="lurker", factory=lambda settings: []),
    StoreSpec(name="sqlite", factory=lambda loc, s: "impostor", suffixes=(".db",)),
)
"""

TWO_TOOLS = """
from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides
plugin = provides(
    ToolSpec(name="loud", factory=lambda s: "loud", risk=ToolRisk.INSPECT),
    ToolSpec(name="quiet", factory=lambda s: "quiet", risk=ToolRisk.INSPECT),
)
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    real, impostor = f"real_{uuid.uuid4().hex[:8]}", f"imp_{uuid.uuid4().hex[:8]}"
    write_distribution(
        root,
        "avo-realstore",
        entry_points={"avo.stores": {"sqlite": f"{real}:plugin"}},
        modules={real: REAL_STORE},
    )
    write_distribution(
        root,
        "avo-impostor",
        entry_points={"avo.hooks": {"lurker": f"{impostor}:plugin"}},
        modules={impostor: IMPOSTOR},
    )
    return root


def _manager(site: Path, **kwargs: object) -> PluginManager:
    return PluginManager(path=[str(site)], environ={}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "order",
    [("store", "hook"), ("hook", "store"), ("all",)],
    ids=["store-first", "impostor-first", "load-all"],
)
def test_an_undeclared_name_is_refused_in_any_load_order(
    site: Path, order: tuple[str, ...]
) -> None:
    manager = _manager(site)
    for step in order:
        if step == "all":
            manager.load_all()
        elif step == "hook":
            with pytest.raises(PluginError, match="does not declare"):
                manager.get("hook", "lurker")
        else:
            assert manager.get("store", "sqlite").factory("x", {}) == "real"
    assert manager.get("store", "sqlite").factory("x", {}) == "real"
    assert manager.registration("store", "sqlite").package == "avo-realstore"
    [problem] = [p for p in manager.problems if p.name == "lurker"]
    assert problem.package == "avo-impostor"
    assert "registers store 'sqlite', which avo-impostor does not declare" in problem.reason
    assert "avo.stores" in problem.reason


def test_an_in_process_plugin_cannot_take_an_installed_name_in_either_order(site: Path) -> None:
    own = provides(StoreSpec(name="sqlite", factory=lambda loc, s: "mine", suffixes=(".db",)))
    before = _manager(site)
    with pytest.raises(PluginConflictError, match="'sqlite' is registered by both avo-realstore"):
        before.register(own, "mine")
    after = _manager(site)
    after.get("store", "sqlite")
    with pytest.raises(PluginConflictError, match="'sqlite' is registered by both avo-realstore"):
        after.register(provides(StoreSpec(name="sqlite", factory=lambda loc, s: 0)), "mine")
    # With the installed one blocked, the in-process one is welcome.
    blocked = _manager(site, block=["avo-realstore"])
    blocked.register(own, "mine")
    assert blocked.get("store", "sqlite").factory("x", {}) == "mine"


def test_a_declared_name_the_switches_disable_is_left_out(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "site2"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    module = f"two_{uuid.uuid4().hex[:8]}"
    write_distribution(
        root,
        "avo-two",
        entry_points={"avo.tools": {"loud": f"{module}:plugin", "quiet": f"{module}:plugin"}},
        modules={module: TWO_TOOLS},
    )
    manager = PluginManager(path=[str(root)], environ={}, block=["quiet"])
    assert manager.get("tool", "loud").factory({}) == "loud"
    assert "quiet" not in manager.specs("tool")
    with pytest.raises(PluginError, match="disabled: blocked"):
        manager.get("tool", "quiet")
