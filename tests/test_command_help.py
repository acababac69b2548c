"""The one-line help of every shipped `avo` command reads the same way in `avo --help`.

Each line is a lower-case phrase without a closing period (argparse's own
lines are written so), short enough for the command list's column.
"""

from __future__ import annotations

from avo.plugins.manager import PluginManager


def test_every_command_help_is_a_lower_case_phrase() -> None:
    manager = PluginManager()
    helps = {name: manager.get("command", name).help for name in manager.names("command")}
    assert {"run", "runs", "chat", "ui", "doctor"} <= set(helps)  # the shipped plugins' too
    odd = {
        name: text
        for name, text in helps.items()
        if not text or not text[0].islower() or text.endswith(".") or len(text) > 90
    }
    assert not odd, f"command help lines that read differently from the others: {odd}"
