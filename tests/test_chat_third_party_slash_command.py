"""A third party's chat slash command: built as a wheel, installed with ``avo plugin install``
into a fresh venv, listed by ``/help`` with its package, and run in ``avo chat`` on a real
pseudo-terminal (it prints Markdown, attaches text to the next message, and a failing
command of the same package is reported without ending the chat)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "plugins" / "chat" / "tests"))

from pty_kit import Terminal, environment

JIRA_PLUGIN = '''
"""avo-jira: two chat commands, reachable only through entry points."""

from avo.plugins import SlashCommandSpec, lazy_slash_command, provides


def broken(chat, argument):
    raise RuntimeError("the tracker is down")


plugin = provides(
    lazy_slash_command("jira", "avo_jira.commands", "jira", help="attach a ticket", usage="KEY"),
    SlashCommandSpec(name="jira-broken", run=broken, help="always fails"),
)
'''

JIRA_COMMANDS = """
async def jira(chat, argument):
    if not argument:
        chat.error("/jira needs a ticket KEY")
        return
    chat.markdown(f"**{argument}**: the login page times out")
    chat.attach(f"ticket {argument}", f"{argument}: the login page times out after 30 s")
    chat.print(f"ticket {argument} attached", style="dim")
"""

CONFIG = """
[provider]
name = "fake"

[[provider.settings.script]]
content = "looking at the ticket"

[store]
location = "chat.db"
"""


def test_a_slash_command_from_an_installed_package(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    package = kit.write_package(
        tmp_path / "src",
        "jira",
        version="0.2.0",
        entry_points={
            "avo.slash_commands": {
                "jira": "avo_jira.plugin:plugin",
                "jira-broken": "avo_jira.plugin:plugin",
            }
        },
        plugin_source=JIRA_PLUGIN,
    )
    (package / "src" / "avo_jira" / "commands.py").write_text(JIRA_COMMANDS, encoding="utf-8")
    wheel = kit.build_wheel(package, tmp_path / "dist")
    installed = plugin_venv.avo("plugin", "install", str(wheel))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "slash_command 'jira' from avo-jira 0.2.0" in installed.stdout

    (plugin_venv.cwd / "avo.toml").write_text(CONFIG, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    env = environment(home, PIP_NO_INDEX="1")
    env.pop("PYTHONPATH", None)
    term = Terminal(["chat"], cwd=plugin_venv.cwd, env=env, python=str(plugin_venv.python))
    try:
        term.wait_for("/help lists commands")
        term.enter("/help")
        term.wait_for("!CMD runs a command in the sandbox")  # the line after the table
        row = next(line for line in term.lines() if line.startswith("/jira "))
        assert "KEY" in row and "attach a ticket" in row and "avo-jira" in row
        assert "avo-chat" in next(line for line in term.lines() if line.startswith("/undo"))
        term.type("/ji")
        term.type("\t")
        term.wait_until(lambda t: "attach a ticket" in t.display(), what="completion menu")
        term.ctrl("u")
        term.enter()
        term.enter("/jira ABC-7")
        term.wait_for("ticket ABC-7 attached")
        assert "ABC-7: the login page times out" in term.text()
        term.wait_until(lambda t: "1 attached" in t.display(), what="the attachment")
        term.enter("/jira-broken")
        term.wait_for("/jira-broken failed (avo-jira): RuntimeError: the tracker is down")
        term.enter("what is wrong?")
        term.wait_for("looking at the ticket")
        term.ctrl("d")
        assert term.wait_exit() == 0
        [run] = plugin_venv.avo_json("runs", "list")
        assert run["task"].startswith("what is wrong?")
        assert '<attached source="ticket ABC-7">' in run["task"]  # the next turn got it
    finally:
        term.close()
