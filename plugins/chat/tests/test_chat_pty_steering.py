"""Typing while a tool runs: the input stays live, and the message steers the working turn."""

from __future__ import annotations

from chat_kit import Place

from avo_chat.render import MARK

CONFIG = """
tools = ["wait"]

[provider]
name = "fake"

[provider.settings]
script = [
  {tool_call = {name = "wait", arguments = {seconds = 4}}},
  {content = "done waiting"},
]

[store]
location = "chat.db"

[permission]
mode = "bypass_permissions"
"""


def test_input_stays_live_while_a_tool_runs_and_steers_the_turn(
    place: Place, slow_tool: str
) -> None:
    place.config(CONFIG)
    term = place.terminal("chat", PYTHONPATH=slow_tool)
    term.wait_for("/help lists commands")
    term.enter("wait a bit")
    term.wait_until(
        lambda t: "wait 4" in t.display() and "✓ wait" not in t.text(),
        what="the running tool's live line",
    )
    term.type("also check the logs")
    # the keystrokes are echoed while the tool still runs
    term.wait_until(lambda t: MARK + " also check the logs" in t.display(), what="typed text")
    assert "✓ wait" not in term.text()
    term.enter()
    term.wait_for("↳ queued")
    assert "✓ wait" not in term.text()  # queued before the tool finished
    term.wait_for("↳ the agent read: also check the logs")
    term.wait_for("done waiting")
    text = term.text()
    assert text.index("✓ wait") < text.index("↳ the agent read")
    term.ctrl("d")
    assert term.wait_exit() == 0
