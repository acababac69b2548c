"""``[permission]`` in avo.toml, through compose: rules, the safe default, bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from avo.compose import compose
from avo.events import EventType
from avo.exceptions import ConfigError
from avo.models import ToolCall
from avo_permissions import PermissionCallback, PermissionMode

SCRIPT = """
[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "src/a.py", content = "x = 1\\n"}}

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "docs/.env", content = "TOKEN=1\\n"}}

[[provider.settings.script]]
content = "done"
"""


def _config(tmp_path: Path, body: str) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "avo.toml"
    tools = f'tools = [{{name = "write_file", settings = {{workspace = "{workspace}"}}}}]\n'
    path.write_text(tools + body.replace("WS", str(workspace)) + SCRIPT)
    return path


async def test_rules_from_avo_toml_decide_each_call(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        """
[permission]
mode = "default"
workspace = "WS"
allow = [{tool = "write_file", path = "src/**"}]
deny = [{tool = "run_shell", command = "git push", reason = "pushing is for humans"}]
""",
    )
    async with compose(path, environ={}, database=tmp_path / "runs.db") as composition:
        callback = composition.runtime.approval_callback
        assert isinstance(callback, PermissionCallback)
        result = await composition.runtime.run("write files")
        events = await composition.event_store.get_events(result.run_id)
    assert (tmp_path / "ws" / "src" / "a.py").read_text() == "x = 1\n"
    assert not (tmp_path / "ws" / "docs" / ".env").exists()
    kinds = [e.event_type for e in events]
    assert kinds.count(EventType.TOOL_APPROVED) == 1 and kinds.count(EventType.TOOL_DENIED) == 1
    first, second = callback.records
    assert (first.source, first.rule) == (
        "allow",
        'permission.allow[0] (tool write_file, path "src/**")',
    )
    assert (second.source, second.approved) == ("sensitive", False)
    assert "'docs/.env'" in second.reason


def test_no_permission_table_means_mode_default(tmp_path: Path) -> None:
    path = _config(tmp_path, "")
    composition = compose(path, environ={}, database=tmp_path / "runs.db")
    callback = composition.runtime.approval_callback
    assert isinstance(callback, PermissionCallback)
    assert callback.policy.mode is PermissionMode.DEFAULT
    decision = callback.evaluate(
        ToolCall(name="write_file", arguments={"path": "src/b.py", "content": ""})
    )
    assert decision.decision.value == "ask" and decision.source == "mode"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            'deny = [{tool = "x", pth = "src/**"}]',
            "unknown key 'permission.deny[0].pth'; permission.deny[0] accepts: command, host, "
            "path, reason, text, tool",
        ),
        ('allow = [{path = ""}]', "patterns must not be empty"),
        ('mode = "yolo"', "permission.mode"),
        ("allow = [3]", "permission.allow"),
    ],
)
def test_bad_permission_tables_are_clear_errors(tmp_path: Path, table: str, message: str) -> None:
    path = _config(tmp_path, f"[permission]\n{table}\n")
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        compose(path, environ={}, database=tmp_path / "runs.db")
    assert str(path) in str(info.value)
