"""Chat slash commands are a plugin kind like any other: ``avo.slash_commands``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from avo.exceptions import PluginConflictError
from avo.plugins import (
    GROUP_OF_KIND,
    SlashCommandSpec,
    ToolSpec,
    lazy_slash_command,
    provides,
)
from avo.plugins.manager import PluginManager
from avo.testing.plugins import plugin_manager, write_distribution

SOURCE = """
from avo.plugins import lazy_slash_command, provides

plugin = provides(
    lazy_slash_command("jira", "acme_jira.commands", "jira", help="Open a ticket", usage="KEY"),
)
"""

COMMANDS = """
def jira(chat, argument):
    return f"ticket {argument}"
"""


def test_the_group_is_avo_slash_commands() -> None:
    assert GROUP_OF_KIND["slash_command"] == "avo.slash_commands"


def test_an_installed_slash_command_is_discovered_and_imported_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "site"
    write_distribution(
        root,
        "acme-jira",
        entry_points={"avo.slash_commands": {"jira": "acme_jira.plugin:plugin"}},
        modules={"acme_jira.plugin": SOURCE, "acme_jira.commands": COMMANDS},
    )
    monkeypatch.syspath_prepend(str(root))
    manager = PluginManager(path=[str(root)], environ={})
    assert manager.names("slash_command") == ["jira"]
    spec = manager.get("slash_command", "jira")
    assert isinstance(spec, SlashCommandSpec)
    assert (spec.help, spec.usage, spec.while_busy) == ("Open a ticket", "KEY", False)
    assert "acme_jira.commands" not in sys.modules  # lazy until it runs
    assert spec.run(None, "ABC-1") == "ticket ABC-1"
    assert manager.registration("slash_command", "jira").package == "acme-jira"


def test_slash_commands_are_not_part_of_a_runs_plugin_set() -> None:
    command = SlashCommandSpec(name="hello", run=lambda chat, arg: None, help="say hello")
    tool = ToolSpec(name="noop", factory=lambda settings: None)
    manager = plugin_manager(provides(command), provides(tool))
    manager.load_kind("slash_command")
    manager.load_kind("tool")
    kinds = {item["kind"] for item in manager.plugin_set()}
    assert kinds == {"tool"}


def test_two_in_process_plugins_with_one_command_name_conflict() -> None:
    first = provides(SlashCommandSpec(name="undo", run=lambda chat, arg: None))
    second = provides(SlashCommandSpec(name="undo", run=lambda chat, arg: None))
    with pytest.raises(PluginConflictError, match="slash_command 'undo'"):
        plugin_manager(first, second)


def test_lazy_slash_command_keeps_its_fields() -> None:
    spec = lazy_slash_command(
        "cost", "json", "dumps", help="h", usage="", aliases=("c",), while_busy=True
    )
    assert (spec.name, spec.aliases, spec.while_busy) == ("cost", ("c",), True)
