"""A runtime composed from avo.toml: tools, sandbox and permission mode chosen by name.

The kernel's ``avo.compose`` resolves every name through the plugin manager;
the workspace and the sandbox come from the tools' own settings, so no Python
wiring (bind_workspace / bind_sandbox) is needed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from avo.compose import compose
from avo.events import EventType
from avo.state import RunState

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")

CONFIG = """
tools = [
  {{name = "read_file", settings = {{workspace = "{ws}"}}}},
  {{name = "write_file", settings = {{workspace = "{ws}"}}}},
  {{name = "run_shell", settings = {{workspace = "{ws}", sandbox = "bubblewrap"}}}},
]

[provider]
name = "fake"
[provider.settings]
script = [
  {{tool_call = {{name = "read_file", arguments = {{path = "calc.py"}}}}}},
  {{tool_call = {{name = "write_file", arguments = {{path = "out.txt", content = "hi"}}}}}},
  {{tool_call = {{name = "run_shell", arguments = {{command = "{cmd}"}}}}}},
  {{content = "done"}},
]

[store]
name = "memory"

[permission]
mode = "{mode}"
"""


async def _run(tmp_path: Path, mode: str):  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "calc.py").write_text("X = 1\n")
    config = tmp_path / "avo.toml"
    config.write_text(CONFIG.format(ws=ws, mode=mode, cmd="cat out.txt; echo; echo $((6*7))"))
    composition = compose(config, environ={})
    runtime = composition.runtime
    result = await runtime.run("go", run_id=f"cfg-{mode}")
    events = await runtime.event_store.get_events(result.run_id)
    return result, events, ws


async def test_bypass_mode_runs_everything_in_the_configured_sandbox(tmp_path: Path) -> None:
    result, events, ws = await _run(tmp_path, "bypass_permissions")
    assert result.status is RunState.COMPLETED, result.error
    approved = [e.payload["name"] for e in events if e.event_type is EventType.TOOL_APPROVED]
    assert approved == ["read_file", "write_file", "run_shell"]
    shell = [
        e.payload["result"]["output"]
        for e in events
        if e.event_type is EventType.TOOL_COMPLETED and e.payload["name"] == "run_shell"
    ]
    assert shell[0]["stdout"] == "hi\n42\n"
    assert (ws / "out.txt").read_text() == "hi"


async def test_plan_mode_from_config_denies_the_write(tmp_path: Path) -> None:
    result, events, ws = await _run(tmp_path, "plan")
    # The write is denied (the model reads why); the shell command then needs a
    # person, and nobody is there to ask: the run pauses, durably.
    assert result.status is RunState.PAUSED and result.stop_reason is None
    decisions = [
        (e.event_type.value, e.payload["name"])
        for e in events
        if e.event_type in (EventType.TOOL_APPROVED, EventType.TOOL_DENIED)
    ]
    assert decisions == [("tool_approved", "read_file"), ("tool_denied", "write_file")]
    [asked] = [e.payload for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert asked["name"] == "run_shell" and asked["risk"] == "execute"
    assert not (ws / "out.txt").exists()
