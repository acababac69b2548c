"""What one typed entry means: a slash command, ``!command``, a message, or steering.

- ``/name argument`` runs a slash command (``//text`` sends ``/text`` as a message);
- ``!command`` runs a shell command in the sandbox; its output goes to the next turn;
- anything else is a message: a new turn, or, while a turn works, steering
  (the agent reads it before its next step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo_chat.slash import run_command

if TYPE_CHECKING:
    from avo_chat.chat import Chat


def kind_of(text: str) -> str:
    """``command``, ``shell``, ``message`` or ``empty``."""
    stripped = text.strip()
    if not stripped:
        return "empty"
    if stripped.startswith("/") and not stripped.startswith("//"):
        return "command"
    if stripped.startswith("!") and len(stripped) > 1:
        return "shell"
    return "message"


def message_text(text: str) -> str:
    """The message as sent (``//x`` becomes ``/x``)."""
    stripped = text.strip()
    return stripped[1:] if stripped.startswith("//") else text.strip()


async def handle(chat: Chat, text: str) -> None:
    """Act on one entry typed while no turn works."""
    kind = kind_of(text)
    if kind == "command":
        await run_command(chat, text)
    elif kind == "shell":
        await run_command(chat, "/shell " + text.strip()[1:])
    elif kind == "message":
        await chat.turn(message_text(text))


async def handle_busy(chat: Chat, text: str) -> None:
    """Act on one entry typed while a turn works: steer it, or a read-only command."""
    kind = kind_of(text)
    if kind == "command":
        await run_command(chat, text)
    elif kind == "shell":
        chat.screen.say(
            "!commands wait for the turn to finish (Ctrl-C interrupts it)", style="warn"
        )
    elif kind == "message":
        chat.steer(message_text(text))


__all__ = ["handle", "handle_busy", "kind_of", "message_text"]
