"""Every built-in command once, over a pipe, in a git workspace: each answers, none fails."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from chat_kit import Place

CONFIG = """
tools = ["read_file", "write_file", "grep", "glob", "workspace_map", "symbols", "lint"]

[provider]
name = "fake"

[provider.settings]
repeat_last = true

[[provider.settings.script]]
content = "ok"

[store]
location = "chat.db"
"""

ENTRIES = """\
hello
/tools
/permissions
/permissions accept_edits
/instructions be brief
/instructions
/context
/cost
/jobs
/job
/inspect
/replay
/mcp
/plugin tool
/skills
/export
/draft save later
/draft
/draft clear
/diff
/log
/grep def
/find *.py
/map
/symbols m.py
/lint m.py
/sessions
/new second
/session
/clear
/commit snapshot
/stash list
/help
/quit
"""


@pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bwrap") is None,
    reason="the git commands need git, /lint a sandbox (bubblewrap)",
)
def test_every_command_answers(place: Place) -> None:
    workspace = place.workspace
    (workspace / "m.py").write_text("def f():\n    return 1\n")
    for command in (
        ["init", "-q"],
        ["config", "user.email", "chat@example.invalid"],
        ["config", "user.name", "chat test"],
        ["add", "m.py"],
        ["commit", "-qm", "init"],
    ):
        subprocess.run(["git", *command], cwd=workspace, check=True)
    place.config(CONFIG)
    done = place.pipe("chat", stdin=ENTRIES)
    out, err = done.stdout, done.stderr
    assert "failed (" not in err and "error" not in err.lower(), err
    assert done.returncode == 0, err
    for expected in (
        "read_file",  # /tools
        "permission mode: default",
        "permission mode accept_edits from the next turn",
        "added here: be brief",
        "window:",
        "total",  # /cost
        "no run is working, interrupted or waiting",
        "state    completed",  # /job (the last turn)
        "run_completed",  # /inspect
        "events match",  # /replay
        "no [mcp] servers",
        "write_file",  # /plugin tool
        "no skills in",
        "wrote ",  # /export
        "later",  # /draft
        "init",  # /log
        "m.py:1: def f():",  # /grep
        "m.py  (",  # /map
        "function f",  # /symbols
        "▶",  # /sessions
        "title second",  # /session after /new
        "snapshot",  # /commit
        "/undo",  # /help
    ):
        assert expected in out, f"{expected!r} missing from:\n{out}"
    assert list(workspace.glob("avo-session-*.md"))
