"""A broken plugin, a duplicate name and an incompatible kernel requirement.

Real packages installed with pip into a fresh venv: each problem is reported
(name, package, version, reason) while every other plugin keeps working.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TOOL_SOURCE = """
from pydantic import BaseModel
from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides


class Args(BaseModel):
    text: str = ""


def make(settings):
    from avo.tools import FunctionTool

    return FunctionTool(
        name={name!r},
        description="Say which package answered.",
        arguments_model=Args,
        function=lambda args: {answer!r},
        risk=ToolRisk.INSPECT,
    )


plugin = provides(ToolSpec(name={name!r}, factory=make, risk=ToolRisk.INSPECT))
"""

CONFIG = """
tools = [{tool!r}]
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = {tool!r}, arguments = {{text = "x"}}}}
[[provider.settings.script]]
content = "finished"
[store]
location = "memory:"
"""


def _tool_package(kit: Any, root: Path, dist: str, tool: str, **kwargs: Any) -> Path:
    source = kwargs.pop("source", None) or TOOL_SOURCE.format(name=tool, answer=f"from {dist}")
    module = f"avo_{dist.replace('-', '_')}"
    package = kit.write_package(
        root,
        dist,
        entry_points={"avo.tools": {tool: f"{module}.plugin:plugin"}},
        plugin_source=source,
        **kwargs,
    )
    return kit.build_wheel(package, root / "dist")


def test_broken_duplicate_and_incompatible_plugins_are_isolated(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    root = tmp_path / "packages"
    root.mkdir()
    wheels = [
        _tool_package(kit, root, "good", "good_tool"),
        _tool_package(
            kit, root, "broken", "broken_tool", source="import avo_no_such_dependency_xyz\n"
        ),
        _tool_package(kit, root, "twin-a", "twin"),
        _tool_package(kit, root, "twin-b", "twin"),
    ]
    installed = plugin_venv.avo("plugin", "install", *[str(w) for w in wheels])
    assert installed.returncode == 1, installed.stdout + installed.stderr  # some are broken
    assert "added:  tool 'good_tool' from avo-good 1.0.0" in installed.stdout
    assert "broken: tool 'broken_tool'" in installed.stdout
    assert "broken: tool 'twin'" in installed.stdout and "name conflict" in installed.stdout
    # pip itself refuses a plugin whose kernel requirement cannot be met; force it in
    future = _tool_package(kit, root, "future", "future_tool", requires=("avo-kernel>=2,<3",))
    plugin_venv.pip_install(future)

    rows = {row["name"]: row for row in plugin_venv.avo_json("plugin", "list")}
    assert rows["good_tool"]["status"] == "ok" and rows["fake"]["status"] == "ok"
    broken = rows["broken_tool"]
    assert (broken["status"], broken["package"], broken["version"]) == (
        "broken",
        "avo-broken",
        "1.0.0",
    )
    assert "ModuleNotFoundError: No module named 'avo_no_such_dependency_xyz'" in broken["reason"]
    twin = rows["twin"]
    assert twin["status"] == "conflict"
    assert "avo-twin-a 1.0.0" in twin["reason"] and "avo-twin-b 1.0.0" in twin["reason"]
    future = rows["future_tool"]
    assert future["status"] == "incompatible"
    assert "requires avo-kernel<3,>=2" in future["reason"]  # as the wheel's metadata spells it
    assert "this kernel is 1.0.0 (plugin API 1.0)" in future["reason"]

    listing = plugin_venv.avo("plugin", "list")
    assert listing.returncode == 0
    assert "tool 'twin' (avo-twin-a, avo-twin-b): name conflict" in listing.stdout

    config = plugin_venv.cwd / "avo.toml"
    config.write_text(CONFIG.format(tool="good_tool"), encoding="utf-8")
    good = plugin_venv.avo("run", "use the good tool")
    assert good.returncode == 0, good.stderr
    assert good.stdout == "finished\n" and "stop reason: completed" in good.stderr

    config.write_text(CONFIG.format(tool="twin"), encoding="utf-8")
    clash = plugin_venv.avo("run", "use the twin")
    assert clash.returncode == 2
    assert clash.stderr.startswith("avo: ")
    assert "avo-twin-a 1.0.0" in clash.stderr and "avo-twin-b 1.0.0" in clash.stderr
    resolved = plugin_venv.avo("run", "use the twin", AVO_PLUGINS_BLOCK="avo-twin-b")
    assert resolved.returncode == 0, resolved.stderr

    config.write_text(CONFIG.format(tool="future_tool"), encoding="utf-8")
    future_run = plugin_venv.avo("run", "use the future")
    assert future_run.returncode == 2
    assert "requires avo-kernel<3,>=2" in future_run.stderr

    config.write_text(CONFIG.format(tool="broken_tool"), encoding="utf-8")
    broken_run = plugin_venv.avo("run", "use the broken one")
    assert broken_run.returncode == 2
    assert "avo-broken 1.0.0" in broken_run.stderr and "ModuleNotFoundError" in broken_run.stderr
