"""Ctrl-C mid-turn leaves the run resumable; ``avo resume`` in a new process continues it."""

from __future__ import annotations

from chat_kit import Place

STORY = " ".join(f"word{i}" for i in range(60)) + " THE END"

CONFIG = f"""
[provider]
name = "fake"

[provider.settings]
chunk_chars = 4
chunk_delay_ms = 60

[[provider.settings.script]]
content = "{STORY}"

[[provider.settings.script]]
content = "the second turn"

[store]
location = "chat.db"
"""


def test_ctrl_c_interrupts_the_turn_and_avo_resume_continues_it(place: Place) -> None:
    place.config(CONFIG)
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("tell me a story")
    term.wait_for("word3")  # the answer is streaming
    term.ctrl("c")
    term.wait_for("interrupting the turn")
    term.wait_for("paused: type to continue it")
    assert "THE END" not in term.text()
    term.ctrl("d")
    assert term.wait_exit() == 0
    [run] = place.runs()
    assert run["state"] == "paused"  # resumable, not cancelled

    again = place.terminal("resume")
    again.wait_for("continuing the interrupted turn")
    again.wait_for("THE END", timeout=60)
    again.wait_for("/help lists commands")
    again.enter("and then?")
    again.wait_for("the second turn")
    again.enter("/session")
    again.wait_for("2 turns:")
    again.ctrl("d")
    assert again.wait_exit() == 0
    states = sorted(str(r["state"]) for r in place.runs())
    assert states == ["completed", "completed"]
