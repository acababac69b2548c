"""Session commands on a real pseudo-terminal: /undo, @mentions, !commands, /compact, /branch."""

from __future__ import annotations

import shutil

import pytest
from chat_kit import SESSION_CONFIG as CONFIG
from chat_kit import Place


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="!commands need a sandbox (bubblewrap)")
def test_undo_mentions_shell_compact_and_branch(place: Place) -> None:
    place.config(CONFIG)
    notes = place.workspace / "notes.md"
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("create notes")
    term.wait_for("created notes.md")
    assert notes.read_text() == "version one\n"
    term.enter("change @notes.md")
    term.wait_for("@ attached notes.md")
    term.wait_for("changed it")
    assert notes.read_text() == "version two\n"

    term.enter("/undo")
    term.wait_for("restored notes.md")
    assert notes.read_text() == "version one\n"
    term.wait_for("dropped turn")
    term.enter("/session")
    term.wait_for("1 turns:")

    term.enter("!cat notes.md")
    term.wait_for("output attached to your next message")
    term.wait_until(lambda t: "1 attached" in t.display(), what="the attachment in the status")
    term.enter("what does it say")
    term.wait_for("It says version one.")

    term.enter("/compact")
    term.wait_for("compacted:")
    term.enter("/context")
    term.wait_for("next turn starts from 4 messages")

    term.enter("/branch 1")
    term.wait_for("you are in the branch")
    term.enter("/session")
    term.wait_for("(branch)")
    term.enter("and now")
    term.wait_for("on the branch")
    term.enter("/sessions")
    term.wait_for("▶")
    term.ctrl("d")
    assert term.wait_exit() == 0
