"""Slash commands: found through ``avo.slash_commands`` entry points, run with a ChatContext.

Every command, built in or a third party's, is a
:class:`~avo.plugins.SlashCommandSpec` its package registers under its
entry-point name; ``/help`` lists each with its package. A command that
fails to load is listed as broken with the reason and the others keep
working. Commands run on the kernel thread, so they may await the event
store and the runtime; what they print goes to the screen.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avo.exceptions import AvoError

if TYPE_CHECKING:
    from avo_chat.chat import Chat


@dataclass(frozen=True)
class ShellResult:
    """A command's exit status and its output (stdout then stderr)."""

    exit_code: int
    output: str


@dataclass
class CommandInfo:
    """A loaded command (or why it could not load)."""

    name: str
    spec: Any
    package: str
    problem: str | None = None


class ChatContext:
    """What a slash command's ``run(chat, argument)`` receives.

    Attributes: ``workspace`` (Path), ``environ``, ``store`` (the event store;
    await its methods), ``runtime`` (what new turns run on), ``session_id``,
    ``config`` (the resolved ``AvoConfig``), ``manager`` (the plugin
    manager), ``busy`` (a turn is working), ``plain`` (no terminal: no colour),
    ``width`` (columns). Output: :meth:`print`, :meth:`markdown`, :meth:`show`
    (a rich renderable), :meth:`error`. :meth:`attach` offers text to the
    user's next message; :meth:`send` sends a message as a turn once the
    command returns; :meth:`ask` / :meth:`confirm` ask the user;
    :meth:`run_tool` calls a tool plugin; :meth:`shell` runs a command in the
    sandbox. ``chat`` is the chat itself (internal; may change).
    """

    def __init__(self, chat: Chat, name: str) -> None:
        self.chat = chat
        self.name = name
        self.sends: list[str] = []

    workspace = property(lambda self: self.chat.workspace)
    environ = property(lambda self: self.chat.environ)
    store = property(lambda self: self.chat.store)
    runtime = property(lambda self: self.chat.runtime)
    session_id = property(lambda self: self.chat.session_id)
    config = property(lambda self: self.chat.config)
    manager = property(lambda self: self.chat.manager)
    busy = property(lambda self: self.chat.busy)
    plain = property(lambda self: self.chat.screen.plain)
    width = property(lambda self: self.chat.screen.width)

    def print(self, text: str = "", *, style: str = "") -> None:
        """A line (or lines) of text."""
        self.chat.screen.say(text, style=style)

    def markdown(self, text: str) -> None:
        """Markdown (rendered on a terminal, as typed on a pipe)."""
        self.chat.screen.markdown(text)

    def show(self, renderable: Any) -> None:
        """A rich renderable (a Table, Syntax...); its plain text on a pipe."""
        self.chat.screen.show(renderable)

    def error(self, text: str) -> None:
        """An error line."""
        self.chat.screen.say(text, style="error")

    def attach(self, label: str, text: str) -> None:
        """Offer ``text`` to the user's next message (the status line counts it)."""
        self.chat.attach(label, text)

    def send(self, text: str) -> None:
        """Send ``text`` as a turn once this command returns."""
        self.sends.append(text)

    async def ask(self, question: str) -> str | None:
        """One line from the user (None: Ctrl-C or end of input)."""
        return await self.chat.screen.ask(question)

    async def confirm(self, question: str) -> bool:
        """A yes/no question; only y/yes is yes."""
        reply = await self.ask(f"{question} [y/N]")
        return (reply or "").strip().lower() in ("y", "yes")

    async def run_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call tool ``name`` (the runtime's, else a fresh one from its plugin)."""
        from avo_chat.workspace_ops import run_tool

        return await run_tool(self.chat, name, arguments)

    async def shell(self, command: str, *, limit: float | None = 120) -> ShellResult:
        """Run ``command`` in the sandbox, in the workspace."""
        from avo_chat.workspace_ops import shell

        return await shell(self.chat, command, limit=limit)


@dataclass
class CommandRegistry:
    """The loaded slash commands by name, their aliases, and the broken ones."""

    commands: dict[str, CommandInfo] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, manager: Any) -> CommandRegistry:
        """Every command the plugin manager knows (broken ones keep their reason)."""
        registry = cls()
        for name in manager.names("slash_command"):
            try:
                spec = manager.get("slash_command", name)
                package = manager.registration("slash_command", name).package or "in-process"
                registry.commands[name] = CommandInfo(name, spec, package)
            except AvoError as exc:
                registry.commands[name] = CommandInfo(name, None, "?", problem=str(exc))
        for problem in getattr(manager, "problems", ()):
            if problem.kind == "slash_command" and problem.name not in registry.commands:
                registry.commands[problem.name] = CommandInfo(
                    problem.name, None, problem.package or "?", problem=problem.reason
                )
        for info in registry.commands.values():
            for alias in getattr(info.spec, "aliases", ()) if info.spec else ():
                if alias not in registry.commands:
                    registry.aliases.setdefault(alias, info.name)
        return registry

    def find(self, word: str) -> CommandInfo | None:
        """The command ``word`` names (or aliases)."""
        return self.commands.get(word) or self.commands.get(self.aliases.get(word, ""))

    def words(self) -> list[str]:
        """Every name and alias, sorted (for completion)."""
        return sorted({*self.commands, *self.aliases})

    def suggest(self, word: str) -> list[str]:
        """Names close to a mistyped ``word``."""
        return difflib.get_close_matches(word, self.words(), n=3, cutoff=0.6)


def split(line: str) -> tuple[str, str]:
    """``"/grep foo *.py"`` -> ``("grep", "foo *.py")``."""
    body = line.strip()[1:]
    name, _, argument = body.partition(" ")
    return name.strip(), argument.strip()


async def run_command(chat: Chat, line: str) -> None:
    """Run one ``/command argument`` line; every failure is one line on the screen."""
    assert chat.commands is not None
    name, argument = split(line)
    info = chat.commands.find(name)
    if info is None:
        hint = chat.commands.suggest(name)
        also = f" (did you mean {', '.join('/' + h for h in hint)}?)" if hint else ""
        chat.screen.say(f"unknown command /{name}{also}; /help lists them", style="error")
        return
    if info.problem is not None:
        chat.screen.say(f"/{name} is broken ({info.package}): {info.problem}", style="error")
        return
    if chat.busy and not info.spec.while_busy:
        chat.screen.say(
            f"/{info.name} waits for the turn to finish (Ctrl-C interrupts it)", style="warn"
        )
        return
    context = ChatContext(chat, info.name)
    try:
        outcome = info.spec.run(context, argument)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except AvoError as exc:
        chat.screen.say(f"/{info.name}: {exc}", style="error")
        return
    except Exception as exc:  # a third party's bug must not end the chat
        chat.screen.say(
            f"/{info.name} failed ({info.package}): {type(exc).__name__}: {exc}", style="error"
        )
        return
    if isinstance(outcome, str) and outcome:
        chat.screen.say(outcome)
    for text in context.sends:
        await chat.turn(text)


def relative(chat: Chat, path: Path) -> str:
    """``path`` relative to the workspace when inside it."""
    try:
        return path.resolve().relative_to(chat.workspace).as_posix()
    except ValueError:
        return str(path)


__all__ = ["ChatContext", "CommandInfo", "CommandRegistry", "ShellResult", "run_command", "split"]
