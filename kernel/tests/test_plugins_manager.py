"""PluginManager: metadata-first discovery, lazy loading, isolation, switches.

Each test writes real distribution metadata (dist-info + entry_points.txt) into
its own directory and points a fresh manager at it, so nothing installed in
the environment leaks in.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from avo.exceptions import PluginConflictError, PluginError
from avo.hookspecs import hookimpl
from avo.models import ToolRisk
from avo.plugins import (
    ProviderSpec,
    StoreSpec,
    ToolSpec,
    discover,
    discover_all,
    names,
    provides,
)
from avo.plugins.discovery import requirement_allows
from avo.plugins.manager import PluginManager
from avo.testing.plugins import write_distribution

TOOL_PLUGIN = """
from avo.plugins import ToolSpec, provides
from avo.models import ToolRisk
plugin = provides(ToolSpec(name={name!r}, factory=lambda settings: settings, risk=ToolRisk.INSPECT))
"""


def _module() -> str:
    return f"plug_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


def _tool_dist(
    root: Path,
    package: str,
    tool: str,
    *,
    version: str = "1.0.0",
    source: str | None = None,
    requires: tuple[str, ...] = ("avo-kernel>=1.0,<2",),
) -> str:
    module = _module()
    write_distribution(
        root,
        package,
        version,
        entry_points={"avo.tools": {tool: f"{module}:plugin"}},
        modules={module: source if source is not None else TOOL_PLUGIN.format(name=tool)},
        requires=requires,
    )
    return module


def _manager(root: Path, **kwargs: Any) -> PluginManager:
    kwargs.setdefault("environ", {})
    return PluginManager(path=[str(root)], **kwargs)


def test_discovery_reads_metadata_without_importing(root: Path) -> None:
    module = _tool_dist(root, "avo-shout", "shout")
    manager = _manager(root)
    assert manager.names("tool") == ["shout"]
    assert module not in sys.modules
    spec = manager.get("tool", "shout")
    assert isinstance(spec, ToolSpec) and spec.risk is ToolRisk.INSPECT
    assert module in sys.modules
    reg = manager.registration("tool", "shout")
    assert (reg.package, reg.version) == ("avo-shout", "1.0.0")
    assert manager.plugin_set() == [
        {"name": "shout", "kind": "tool", "package": "avo-shout", "version": "1.0.0"}
    ]


def test_reference_discovery_functions(root: Path) -> None:
    _tool_dist(root, "avo-shout", "shout")
    entries = discover("avo.tools", path=[str(root)])
    assert [(e.name, e.package, e.kind) for e in entries] == [("shout", "avo-shout", "tool")]
    assert discover_all(path=[str(root)])["avo.providers"] == []
    plugin = entries[0].factory()
    assert plugin.specs[0].name == "shout"
    with pytest.raises(ValueError, match="unknown plugin group"):
        discover("avo.nope")
    assert "fake" in names("avo.providers")  # the kernel's own built-in, from real metadata


def test_import_error_is_isolated_and_the_rest_works(root: Path) -> None:
    _tool_dist(root, "avo-broken", "broken", source="raise ImportError('needs libfoo')\n")
    _tool_dist(root, "avo-shout", "shout")
    manager = _manager(root)
    assert manager.get("tool", "shout").name == "shout"
    with pytest.raises(PluginError) as excinfo:
        manager.get("tool", "broken")
    message = str(excinfo.value)
    assert "'broken'" in message and "avo-broken 1.0.0" in message
    assert "ImportError: needs libfoo" in message
    [problem] = manager.problems
    assert (problem.name, problem.package, problem.version) == ("broken", "avo-broken", "1.0.0")
    assert manager.names("tool") == ["shout"]


def test_duplicate_name_is_a_conflict_naming_both_packages(root: Path) -> None:
    first = _tool_dist(root, "avo-one", "grep")
    second = _tool_dist(root, "avo-two", "grep")
    _tool_dist(root, "avo-shout", "shout")
    manager = _manager(root)
    with pytest.raises(PluginConflictError) as excinfo:
        manager.get("tool", "grep")
    assert "avo-one 1.0.0" in str(excinfo.value) and "avo-two 1.0.0" in str(excinfo.value)
    assert first not in sys.modules and second not in sys.modules
    assert manager.get("tool", "shout").name == "shout"
    rows = {row["name"]: row for row in manager.status()}
    assert rows["grep"]["status"] == "conflict" and rows["shout"]["status"] == "ok"


def test_incompatible_kernel_requirement_is_refused_before_import(root: Path) -> None:
    module = _tool_dist(root, "avo-future", "future", requires=("avo-kernel>=2,<3",))
    _tool_dist(root, "avo-shout", "shout")
    manager = _manager(root)
    with pytest.raises(PluginError) as excinfo:
        manager.get("tool", "future")
    message = str(excinfo.value)
    assert "requires avo-kernel>=2,<3" in message
    assert f"this kernel is {manager.kernel_version}" in message and "plugin API 1.0" in message
    assert module not in sys.modules
    assert manager.get("tool", "shout")


def test_requirement_only_under_an_extra_is_ignored(root: Path) -> None:
    _tool_dist(root, "avo-x", "x", requires=('avo-kernel>=9; extra == "dev"', "avo-kernel~=1.0"))
    assert _manager(root).get("tool", "x").name == "x"


def test_hook_that_raises_is_isolated(root: Path) -> None:
    source = """
from avo.hookspecs import hookimpl
@hookimpl
def avo_register_tools(register):
    raise RuntimeError("boom")
"""
    module = _module()
    write_distribution(
        root,
        "avo-raises",
        entry_points={"avo.tools": {"raiser": module}},
        modules={module: source},
    )
    manager = _manager(root)
    with pytest.raises(PluginError, match="raised in avo_register_tools: RuntimeError: boom"):
        manager.get("tool", "raiser")
    assert not manager.pluggy.get_plugins()


def test_unknown_hook_is_reported(root: Path) -> None:
    source = """
from avo.hookspecs import hookimpl
@hookimpl
def avo_register_tolls(register):
    pass
"""
    module = _module()
    write_distribution(
        root, "avo-typo", entry_points={"avo.tools": {"typo": module}}, modules={module: source}
    )
    manager = _manager(root)
    with pytest.raises(PluginError, match="hooks the kernel does not know: avo_register_tolls"):
        manager.get("tool", "typo")


def test_entry_point_that_registers_nothing_under_its_name(root: Path) -> None:
    _tool_dist(root, "avo-mismatch", "wanted", source=TOOL_PLUGIN.format(name="other"))
    with pytest.raises(PluginError, match="registers tool 'other', which avo-mismatch does not"):
        _manager(root).get("tool", "wanted")
    # declared but never registered
    _tool_dist(root, "avo-empty", "hollow", source="plugin = object()\n")
    with pytest.raises(PluginError, match="registered no tool named 'hollow'"):
        _manager(root).get("tool", "hollow")


def test_switches_autoload_block_allow(root: Path) -> None:
    _tool_dist(root, "avo-shout", "shout")
    _tool_dist(root, "avo-whisper", "whisper")
    off = _manager(root, environ={"AVO_PLUGINS_AUTOLOAD": "0"})
    assert off.names("tool") == []
    with pytest.raises(PluginError, match="autoloading is disabled"):
        off.get("tool", "shout")
    blocked = _manager(root, environ={"AVO_PLUGINS_BLOCK": "shout"})
    assert blocked.names("tool") == ["whisper"]
    with pytest.raises(PluginError, match="blocked"):
        blocked.get("tool", "shout")
    by_package = _manager(root, environ={"AVO_PLUGINS_BLOCK": "avo_whisper"})
    assert by_package.names("tool") == ["shout"]
    allowed = _manager(root, environ={"AVO_PLUGINS_ALLOW": "whisper"})
    assert allowed.names("tool") == ["whisper"]
    with pytest.raises(PluginError, match="allow-list"):
        allowed.get("tool", "shout")
    # config-level switches; the environment wins for autoload
    assert _manager(root, block=["tool:whisper"]).names("tool") == ["shout"]
    on = _manager(root, autoload=False, environ={"AVO_PLUGINS_AUTOLOAD": "1"})
    assert on.names("tool") == ["shout", "whisper"]
    statuses = {row["name"]: row["status"] for row in blocked.status()}
    assert statuses == {"shout": "disabled", "whisper": "ok"}


def test_in_process_register_and_conflict() -> None:
    manager = PluginManager(environ={}, autoload=False)
    plugin = provides(
        ProviderSpec(name="echo", factory=lambda settings, environ: None),
        StoreSpec(name="null", factory=lambda location, settings: None, schemes=("null",)),
    )
    added = manager.register(plugin, name="mine")
    assert sorted(r.name for r in added) == ["echo", "null"]
    assert manager.get("provider", "echo").name == "echo"
    assert manager.names("store") == ["null"]
    again = provides(ProviderSpec(name="echo", factory=lambda settings, environ: None))
    with pytest.raises(PluginConflictError, match="'echo' is registered by both"):
        manager.register(again, name="other")
    with pytest.raises(PluginError, match="unknown provider 'nope'; available: echo"):
        manager.get("provider", "nope")
    with pytest.raises(PluginError, match="unknown plugin kind"):
        manager.get("widget", "x")


def test_register_rejects_a_spec_of_the_wrong_kind() -> None:
    class Wrong:
        @hookimpl
        def avo_register_tools(self, register: Any) -> None:
            register(ProviderSpec(name="p", factory=lambda settings, environ: None))

    manager = PluginManager(environ={}, autoload=False)
    with pytest.raises(PluginError, match="avo_register_tools got ProviderSpec"):
        manager.register(Wrong(), name="wrong")


def test_lifecycle_hooks_are_called_and_a_raising_one_is_isolated() -> None:
    seen: list[str] = []

    class Watcher:
        @hookimpl
        def avo_run_started(self, run_id: str, task: str) -> None:
            seen.append(f"started {run_id} {task}")

    class Broken:
        @hookimpl
        def avo_run_started(self, run_id: str) -> None:
            raise ValueError("bad watcher")

    manager = PluginManager(environ={}, autoload=False)
    manager.register(Watcher(), name="watcher")
    manager.register(Broken(), name="broken")
    manager.hook.avo_run_started(run_id="r1", task="t", plugins=[])
    assert seen == ["started r1 t"]
    assert any(
        "raised in avo_run_started: ValueError: bad watcher" in str(p) for p in manager.problems
    )


def test_check_plugin_set(root: Path) -> None:
    _tool_dist(root, "avo-shout", "shout", version="1.4.0")
    manager = _manager(root)
    recorded = [{"name": "shout", "kind": "tool", "package": "avo-shout", "version": "1.2.0"}]
    assert manager.check_plugin_set(recorded) == []
    older = [{"name": "shout", "kind": "tool", "package": "avo-shout", "version": "0.9.0"}]
    [line] = manager.check_plugin_set(older)
    assert "changed major version: avo-shout 0.9.0 -> avo-shout 1.4.0" in line
    gone = [{"name": "gone", "kind": "tool", "package": "avo-gone", "version": "1.0.0"}]
    assert manager.check_plugin_set(gone) == ["tool 'gone' (avo-gone 1.0.0) is no longer available"]
    moved = [{"name": "shout", "kind": "tool", "package": "avo-other", "version": "1.0.0"}]
    assert "now comes from avo-shout 1.4.0" in manager.check_plugin_set(moved)[0]
    blocked = _manager(root, environ={"AVO_PLUGINS_BLOCK": "shout"})
    assert "is disabled now" in blocked.check_plugin_set(recorded)[0]


@pytest.mark.parametrize(
    ("specifier", "version", "allowed"),
    [
        (">=1.0,<2", "1.0.0", True),
        (">=1.0,<2", "2.0.0", False),
        (">=2", "1.9.9", False),
        ("~=1.0", "1.7", True),
        ("~=1.0", "2.0", False),
        ("==1.*", "1.3.1", True),
        ("!=1.0.0", "1.0.0", False),
        ("", "1.0.0", True),
    ],
)
def test_requirement_allows(specifier: str, version: str, allowed: bool) -> None:
    assert requirement_allows(specifier, version) is allowed


def test_unreadable_requirement_is_reported(root: Path) -> None:
    _tool_dist(root, "avo-odd", "odd", requires=("avo-kernel @ https://example.invalid/k.whl",))
    with pytest.raises(PluginError, match="cannot read its avo-kernel requirement"):
        _manager(root).get("tool", "odd")
