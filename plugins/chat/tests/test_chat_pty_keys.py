"""The keyboard: bare avo starts the chat, Alt-Enter adds a line, Tab completes @paths,
Up recalls what was typed (kept per workspace), Ctrl-C clears, twice leaves."""

from __future__ import annotations

from chat_kit import Place

from avo_chat.render import MARK

CONFIG = """
[provider]
name = "fake"
[provider.settings]
repeat_last = true
[[provider.settings.script]]
content = "noted"
[store]
location = "chat.db"
"""


def test_keys_of_the_chat(place: Place) -> None:
    place.config(CONFIG)
    (place.workspace / "notes-2026.md").write_text("n\n")
    term = place.terminal()  # bare avo on a terminal
    term.wait_for("/help lists commands")
    term.type("line one")
    term.type("\x1b\r")  # Esc Enter (what Alt-Enter sends): a new line, not sent
    term.type("line two")
    term.settle(0.3)
    assert "noted" not in term.text()
    term.enter()
    term.wait_for("noted")
    term.type("read @notes-")
    term.type("\t")
    term.wait_until(lambda t: "@notes-2026.md" in t.display(), what="the completed path")
    term.enter()
    term.wait_for("@ attached notes-2026.md")
    term.wait_for("noted", count=2)
    term.type("\x1b[A")  # Up: the previous entry
    term.wait_until(lambda t: f"{MARK} read @notes-2026.md" in t.display(), what="history")
    term.ctrl("c")  # clears the input
    term.wait_until(lambda t: t.display().count("read @notes-2026.md") == 1, what="cleared")
    term.ctrl("c")
    term.wait_for("press Ctrl-C again or Ctrl-D to leave")
    term.ctrl("c")
    assert term.wait_exit() == 0
    tasks = [str(run["task"]) for run in place.runs()]
    assert "line one\nline two" in tasks

    again = place.terminal("chat")  # history is kept for this workspace
    again.wait_for("/help lists commands")
    again.type("\x1b[A")
    again.wait_until(lambda t: "read @notes-2026.md" in t.display(), what="history across chats")
    again.ctrl("c")
    again.ctrl("d")
    assert again.wait_exit() == 0
