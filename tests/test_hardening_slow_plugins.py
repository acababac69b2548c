"""A plugin whose import hangs cannot hang the CLI (issue 13, item 5).

A real package whose module sleeps for an hour at import is pip-installed into
a fresh venv. ``avo plugin list`` finishes and names it broken; ``avo run``
never imports it unless the config enables it, and then fails with a clear
error instead of hanging. Every command runs in a subprocess with a generous
guard timeout: on a kernel without bounded loading they hang and the test fails.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

SLEEPY = """
import time

time.sleep(3600)  # e.g. a module that dials a server at import time

from avo.plugins import HookPluginSpec, provides

plugin = provides(HookPluginSpec(name="sleepy", factory=lambda settings: []))
"""

CONFIG = """
{hooks}
[provider]
name = "fake"
[[provider.settings.script]]
content = "finished"
[store]
location = "memory:"
"""

GUARD_SECONDS = 90  # far above the bound below; only a hang reaches it


def _avo(venv: Any, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    environment.pop("PYTHONPATH", None)
    environment.update({"XDG_CACHE_HOME": str(venv.cwd.parent / "cache"), **env})
    return subprocess.run(
        [str(venv.python), "-m", "avo.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=venv.cwd,
        timeout=GUARD_SECONDS,
        check=False,
    )


def _install_sleepy(tmp_path: Path, venv: Any, kit: Any) -> None:
    root = tmp_path / "packages"
    root.mkdir()
    package = kit.write_package(
        root,
        "sleepy",
        entry_points={"avo.hooks": {"sleepy": "avo_sleepy.plugin:plugin"}},
        plugin_source=SLEEPY,
    )
    wheel = kit.build_wheel(package, root / "dist")
    venv.pip_install(wheel)


def test_plugin_list_reports_a_hanging_plugin_as_broken(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    _install_sleepy(tmp_path, plugin_venv, kit)
    listed = _avo(plugin_venv, "plugin", "list", AVO_PLUGINS_LOAD_TIMEOUT="2")
    assert listed.returncode == 0, listed.stderr
    rows = [row.split() for row in listed.stdout.splitlines() if row.startswith("sleepy ")]
    assert rows and rows[0][1:3] == ["hook", "avo-sleepy"] and rows[0][-1] == "broken", rows
    assert "did not finish loading within 2 s" in listed.stdout
    assert "fake" in listed.stdout  # every other plugin is still listed


def test_run_never_imports_a_plugin_the_config_does_not_enable(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    _install_sleepy(tmp_path, plugin_venv, kit)
    (plugin_venv.cwd / "avo.toml").write_text(CONFIG.format(hooks=""))
    done = _avo(plugin_venv, "run", "hello")  # the default bound: never reached here
    assert done.returncode == 0, done.stdout + done.stderr
    assert "finished" in done.stdout and "stop reason: completed" in done.stderr


def test_run_with_a_hanging_plugin_enabled_fails_clearly(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    _install_sleepy(tmp_path, plugin_venv, kit)
    (plugin_venv.cwd / "avo.toml").write_text(CONFIG.format(hooks='hooks = ["sleepy"]'))
    done = _avo(plugin_venv, "run", "hello", AVO_PLUGINS_LOAD_TIMEOUT="2")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "sleepy" in done.stderr and "avo-sleepy" in done.stderr
    assert "did not finish loading within 2 s" in done.stderr
