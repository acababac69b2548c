"""avo chat on a real pseudo-terminal: streaming Markdown, tool calls as they happen, /cost."""

from __future__ import annotations

from chat_kit import Place

from avo_chat.render import MARK

CONFIG = """
tools = ["read_file", "write_file"]

[provider]
name = "fake"

[provider.settings]
chunk_chars = 3
chunk_delay_ms = 5

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "notes.md", content = "# Notes\\nhello\\n"}}
usage = {input_tokens = 1000, output_tokens = 200}

[[provider.settings.script]]
tool_call = {name = "read_file", arguments = {path = "notes.md"}}
usage = {input_tokens = 1200, output_tokens = 100}

[[provider.settings.script]]
content = "I wrote **notes.md**:\\n\\n- a heading\\n- a line\\n\\n```python\\nprint('hi')\\n```\\n"
usage = {input_tokens = 1500, output_tokens = 300}

[budget]
input_per_1k = 0.003
output_per_1k = 0.015

[store]
location = "chat.db"

[permission]
mode = "bypass_permissions"
"""


def test_a_turn_streams_markdown_and_shows_each_tool_call(place: Place) -> None:
    place.config(CONFIG)
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("write some notes")
    term.wait_for("✓ write_file")
    term.wait_for("✓ read_file")
    term.wait_for("print('hi')")
    term.wait_until(lambda t: "working" not in t.display(), what="the end of the turn")
    text = term.text()
    assert MARK + " write some notes" in text
    assert "notes.md" in text.split("✓ write_file", 1)[1].splitlines()[0]
    assert "**" not in text  # Markdown is rendered, not printed raw
    assert "• a heading" in text
    assert (place.workspace / "notes.md").read_text() == "# Notes\nhello\n"
    term.enter("/cost")
    term.wait_for("total")
    cost_line = [line for line in term.lines() if line.startswith("total")][-1]
    # 3700 input, 600 output tokens at 0.003 / 0.015 per 1k = 0.0111 + 0.009
    assert "3,700" in cost_line and "600" in cost_line and "$0.0201" in cost_line
    term.ctrl("d")
    assert term.wait_exit() == 0
    print(term.text())
