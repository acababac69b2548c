"""Hook and run-observer faults are visible, and a raising guard fails closed (issue 13, item 6).

A real third-party package, installed with pip into a fresh venv, ships a
PRE_TOOL_USE guard that raises, a POST_TOOL_USE hook that raises and a run
observer (``avo_event_appended``) that raises. ``avo run`` is driven as a user
drives it; the run's log is read back with ``avo runs inspect``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

GUARDS = """
from avo.hookspecs import hookimpl
from avo.hooks import HookDecision
from avo.models import ToolRisk
from avo.plugins import HookPluginSpec, ToolSpec
from pydantic import BaseModel


class Args(BaseModel):
    text: str = ""


def make_tool(settings):
    from avo.tools import FunctionTool

    return FunctionTool(
        name="touch", description="A harmless tool.", arguments_model=Args,
        function=lambda args: "touched", risk=ToolRisk.INSPECT,
    )


def crashing_guard(context):
    raise RuntimeError("guard database is down")


def crashing_audit(context):
    raise ValueError("audit sink is full")


def quiet_guard(context):
    return HookDecision.allow()


def make_guards(settings):
    return [("pre_tool_use", crashing_guard)]


def make_audit(settings):
    return [("post_tool_use", crashing_audit), ("pre_tool_use", quiet_guard)]


@hookimpl
def avo_register_hooks(register):
    register(HookPluginSpec(name="crashguard", factory=make_guards))
    register(HookPluginSpec(name="audit", factory=make_audit))


@hookimpl
def avo_register_tools(register):
    register(ToolSpec(name="touch", factory=make_tool, risk=ToolRisk.INSPECT))


@hookimpl
def avo_event_appended(event):
    if event.event_type.value == "tool_requested":
        raise KeyError("observer lost its index")
"""

CONFIG = """
tools = ["touch"]
hooks = [{hooks}]
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "touch", arguments = {{text = "x"}}}}
[[provider.settings.script]]
content = "finished"
"""


def _install_guards(tmp_path: Path, venv: Any, kit: Any) -> None:
    root = tmp_path / "packages"
    root.mkdir()
    package = kit.write_package(
        root,
        "guards",
        entry_points={
            "avo.hooks": {"crashguard": "avo_guards.plugin", "audit": "avo_guards.plugin"},
            "avo.tools": {"touch": "avo_guards.plugin"},
        },
        plugin_source=GUARDS,
    )
    wheel = kit.build_wheel(package, root / "dist")
    installed = venv.avo("plugin", "install", str(wheel))
    assert installed.returncode == 0, installed.stdout + installed.stderr


def _trace(venv: Any, db: str, summary: str) -> str:
    run_id = next(line.split()[-1] for line in summary.splitlines() if line.startswith("run id:"))
    shown = venv.avo("runs", "inspect", run_id, "-d", db)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_raising_guard_denies_the_call_and_every_fault_is_reported(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    _install_guards(tmp_path, plugin_venv, kit)
    (plugin_venv.cwd / "avo.toml").write_text(CONFIG.format(hooks='"crashguard"'))
    done = plugin_venv.avo("run", "touch it", "-d", "runs.db")
    # Fails closed: the tool never ran; the denial (naming the hook) was the call's
    # result, and the run went on to the model's answer.
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stop reason: completed" in done.stderr
    assert "crashguard" in done.stderr and "RuntimeError: guard database is down" in done.stderr
    # A warning on stderr names the hook and what it raised.
    assert "crashguard" in done.stderr and "guard database is down" in done.stderr
    # The observer's fault is visible too (warning and event), and the run went on.
    assert "avo_event_appended" in done.stderr and "observer lost its index" in done.stderr
    trace = _trace(plugin_venv, "runs.db", done.stderr)
    assert "hook_failed" in trace and "crashguard" in trace and "denied" in trace
    assert "avo_event_appended" in trace
    assert "tool_started" not in trace and "tool_denied" in trace


def test_a_raising_after_hook_is_reported_and_the_run_goes_on(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    _install_guards(tmp_path, plugin_venv, kit)
    (plugin_venv.cwd / "avo.toml").write_text(CONFIG.format(hooks='"audit"'))
    done = plugin_venv.avo("run", "touch it", "-d", "runs.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stop reason: completed" in done.stderr
    assert "audit" in done.stderr and "ValueError: audit sink is full" in done.stderr
    trace = _trace(plugin_venv, "runs.db", done.stderr)
    assert "hook_failed" in trace and "audit sink is full" in trace
    assert "tool_completed" in trace
