"""Plugin loading is bounded in time (issue 13, item 5): a hang becomes a broken plugin."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from avo import _builtins
from avo.compose import compose
from avo.exceptions import ConfigError, PluginError
from avo.plugins.manager import PluginManager
from avo.testing.plugins import write_distribution

HANGS_AT_IMPORT = """
import threading
threading.Event().wait()  # never returns
"""

HANGS_IN_REGISTRATION = """
import threading
from avo.hookspecs import hookimpl


@hookimpl
def avo_register_tools(register):
    threading.Event().wait()
"""

QUICK_TOOL = """
from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides
plugin = provides(ToolSpec(name="quick", factory=lambda s: "quick", risk=ToolRisk.INSPECT))
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def _dist(
    site: Path, package: str, group: str, names: list[str], source: str, attr: str = ""
) -> str:
    module = f"m_{uuid.uuid4().hex[:10]}"
    value = f"{module}:{attr}" if attr else module
    write_distribution(
        site,
        package,
        entry_points={group: {name: value for name in names}},
        modules={module: source},
    )
    return module


def test_a_hanging_import_is_reported_broken_and_the_rest_loads(site: Path) -> None:
    _dist(site, "avo-stuck", "avo.tools", ["stuck", "stuck_too"], HANGS_AT_IMPORT)
    _dist(site, "avo-quick", "avo.tools", ["quick"], QUICK_TOOL, attr="plugin")
    manager = PluginManager(path=[str(site)], environ={}, load_timeout=0.3)
    rows = {row["name"]: row for row in manager.status()}
    stuck = rows["stuck"]
    assert (stuck["status"], stuck["package"]) == ("broken", "avo-stuck")
    assert "did not finish loading within 0.3 s (importing" in stuck["reason"]
    assert "AVO_PLUGINS_BLOCK=stuck" in stuck["reason"]
    # The second entry of the same module is not waited on again.
    assert "did not finish loading" in rows["stuck_too"]["reason"]
    with pytest.raises(PluginError, match="did not finish loading"):
        manager.get("tool", "stuck")
    assert rows["quick"]["status"] == "ok"
    assert manager.get("tool", "quick").factory({}) == "quick"


def test_a_hanging_registration_hook_is_bounded_too(site: Path) -> None:
    _dist(site, "avo-slowreg", "avo.tools", ["slowreg"], HANGS_IN_REGISTRATION)
    manager = PluginManager(path=[str(site)], environ={"AVO_PLUGINS_LOAD_TIMEOUT": "0.3"})
    assert manager.load_timeout == 0.3
    with pytest.raises(PluginError, match=r"within 0\.3 s \(its registration hooks hangs\)"):
        manager.get("tool", "slowreg")
    assert manager.specs("tool") == {}


@pytest.mark.parametrize("raw", ["0", "-1", "soon"])
def test_a_bad_load_timeout_is_a_config_error(raw: str) -> None:
    with pytest.raises(ConfigError, match=f"AVO_PLUGINS_LOAD_TIMEOUT='{raw}' is not a positive"):
        PluginManager(environ={"AVO_PLUGINS_LOAD_TIMEOUT": raw})


def test_compose_imports_only_the_hooks_the_config_names(site: Path, tmp_path: Path) -> None:
    module = _dist(site, "avo-unwanted", "avo.hooks", ["unwanted"], "raise SystemExit('imported')")
    config = tmp_path / "avo.toml"
    config.write_text('[provider]\nname = "fake"\n[store]\nlocation = "memory:"\n')
    manager = PluginManager(path=[str(site)], environ={})
    manager.register(_builtins.fake_provider, "fake")
    manager.register(_builtins.memory_store, "memory")
    composed = compose(config, environ={}, manager=manager)
    assert composed.runtime is not None
    assert not [p for p in manager.problems if p.name == "unwanted"]
    assert module not in sys.modules
