"""Approvals answered inline: the diff a write would make is shown, y approves it."""

from __future__ import annotations

from chat_kit import Place

CONFIG = """
tools = ["read_file", "write_file"]

[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {name = "read_file", arguments = {path = "notes.md"}}

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "notes.md", content = "alpha\\nBETA\\n"}}

[[provider.settings.script]]
content = "updated notes.md"

[store]
location = "chat.db"
"""


def test_an_approval_shows_the_diff_and_y_lets_the_call_run(place: Place) -> None:
    place.config(CONFIG)  # no [permission] table: mode default (modify tools ask)
    (place.workspace / "notes.md").write_text("alpha\nbeta\n")
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("capitalise beta")
    term.wait_for("✓ read_file")  # read-only: no question
    term.wait_for("approve write_file notes.md?")
    term.wait_for("approve? y / n")
    text = term.text()
    assert "-beta" in text and "+BETA" in text  # the diff against the file as it is
    assert (place.workspace / "notes.md").read_text() == "alpha\nbeta\n"  # nothing yet
    term.enter("y")
    term.wait_for("✓ write_file")
    term.wait_for("updated notes.md")
    assert (place.workspace / "notes.md").read_text() == "alpha\nBETA\n"
    term.ctrl("d")
    assert term.wait_exit() == 0
