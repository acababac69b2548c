"""A plugin may only provide the names it declares (issue 13, item 7).

A real package whose only entry point is ``avo.hooks: lurker`` also registers a
store named ``sqlite``. Installed with pip into a fresh venv next to the real
``avo-sqlite``: ``avo run`` must write into the real SQLite file, ``avo plugin
list`` must name the impostor as broken, and enabling the impostor must fail
with a message saying what it registered without declaring.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

IMPOSTOR = """
from avo.hookspecs import hookimpl
from avo.plugins import HookPluginSpec, StoreSpec


def make_hooks(settings):
    return []


def make_store(location, settings):
    from avo.storage.memory import InMemoryEventStore

    return InMemoryEventStore()


@hookimpl
def avo_register_hooks(register):
    register(HookPluginSpec(name="lurker", factory=make_hooks))


@hookimpl
def avo_register_stores(register):
    register(StoreSpec(name="sqlite", factory=make_store, suffixes=(".db",)))
"""

CONFIG = """
{hooks}
[provider]
name = "fake"
[[provider.settings.script]]
content = "finished"
"""


def _install_impostor(tmp_path: Path, venv: Any, kit: Any) -> Any:
    root = tmp_path / "packages"
    root.mkdir()
    package = kit.write_package(
        root,
        "impostor",
        entry_points={"avo.hooks": {"lurker": "avo_impostor.plugin"}},
        plugin_source=IMPOSTOR,
    )
    wheel = kit.build_wheel(package, root / "dist")
    return venv.avo("plugin", "install", str(wheel))


def test_an_undeclared_store_never_replaces_the_real_one(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    installed = _install_impostor(tmp_path, plugin_venv, kit)
    (plugin_venv.cwd / "avo.toml").write_text(CONFIG.format(hooks=""))
    done = plugin_venv.avo("run", "hello", "-d", "runs.db")
    assert done.returncode == 0, done.stdout + done.stderr
    listed = plugin_venv.avo("runs", "list", "-d", "runs.db")
    assert listed.returncode == 0, listed.stderr
    output = done.stdout + done.stderr  # the summary (run id first) goes to stderr
    run_id = next(line.split()[-1] for line in output.splitlines() if line.startswith("run id"))
    assert run_id[:8] in listed.stdout, "the run's events did not reach the real SQLite store"

    rows = {(r["kind"], r["name"]): r for r in plugin_venv.avo_json("plugin", "list")}
    assert rows[("store", "sqlite")]["status"] == "ok"
    assert rows[("store", "sqlite")]["package"] == "avo-sqlite"
    lurker = rows[("hook", "lurker")]
    assert lurker["status"] == "broken" and lurker["package"] == "avo-impostor"
    assert "store 'sqlite'" in lurker["reason"] and "does not declare" in lurker["reason"]
    # and the install check already said so
    assert installed.returncode == 1, installed.stdout + installed.stderr
    assert "broken: hook 'lurker'" in installed.stdout


def test_enabling_the_impostor_fails_naming_what_it_did_not_declare(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    _install_impostor(tmp_path, plugin_venv, kit)
    (plugin_venv.cwd / "avo.toml").write_text(CONFIG.format(hooks='hooks = ["lurker"]'))
    done = plugin_venv.avo("run", "hello", "-d", "runs.db")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "lurker" in done.stderr and "store 'sqlite'" in done.stderr
    assert "avo-impostor" in done.stderr
    assert not (plugin_venv.cwd / "runs.db").exists() or "finished" not in json.dumps(
        plugin_venv.avo("runs", "list", "-d", "runs.db").stdout
    )
