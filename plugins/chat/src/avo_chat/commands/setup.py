"""Switches for the next turn: /model, /provider, /permissions, /instructions.

A switch recomposes the runtime from the configuration plus the switch
(exactly what ``avo run --model ...`` would build), so the next turn's run
records it in its composition: the session remembers which model each turn
used, and ``avo resume`` takes the last one up again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo.exceptions import AvoError
from avo_chat.chat import check_not_busy

if TYPE_CHECKING:
    from avo_chat.slash import ChatContext


def _known_models(chat: ChatContext, provider: str) -> list[str]:
    try:
        spec = chat.manager.get("provider", provider)
    except AvoError:
        return []
    return list(getattr(spec, "models", ()) or ())


def model(chat: ChatContext, argument: str) -> None:
    """Show the model, or switch to NAME for the next turns."""
    core = chat.chat
    provider = chat.config.provider.name if chat.config.provider else "?"
    if not argument:
        known = _known_models(chat, provider)
        chat.print(f"model: {core.model_label()}")
        if known:
            chat.print(f"{provider} offers: {', '.join(known)}", style="dim")
        return
    check_not_busy(core, "/model")
    core.switch(model=argument)
    chat.print(f"model {core.model_label()} from the next turn", style="ok")


def provider(chat: ChatContext, argument: str) -> None:
    """Show the providers, or switch to NAME (and MODEL) for the next turns."""
    core = chat.chat
    if not argument:
        current = chat.config.provider.name if chat.config.provider else None
        names = chat.manager.names("provider")
        chat.print(f"provider: {core.model_label()}")
        chat.print(
            "installed: " + ", ".join(f"[{n}]" if n == current else n for n in names),
            style="dim",
        )
        return
    check_not_busy(core, "/provider")
    name, _, rest = argument.partition(" ")
    if name not in chat.manager.names("provider"):
        raise AvoError(
            f"no provider {name!r}; installed: {', '.join(chat.manager.names('provider'))}"
        )
    core.switch(provider=name, model=rest.strip() or None)
    chat.print(f"provider {core.model_label()} from the next turn", style="ok")


def permissions(chat: ChatContext, argument: str) -> None:
    """Show the permission mode and rules, switch to MODE, or ``forget`` the always answers."""
    core = chat.chat
    current = chat.config.permission
    if not argument:
        mode = current.mode if current else "default"
        chat.print(f"permission mode: {mode}")
        if core.always_allowed:
            allowed = ", ".join(sorted(core.always_allowed))
            chat.print(f"allowed without asking in this chat (you said always): {allowed}")
        chat.print("modes: " + ", ".join(chat.manager.names("permission")), style="dim")
        return
    if argument == "forget" and "forget" not in chat.manager.names("permission"):
        forgotten = ", ".join(sorted(core.always_allowed)) or "nothing"
        core.always_allowed.clear()
        chat.print(f"every approval asks again (forgot: {forgotten})", style="ok")
        return
    check_not_busy(core, "/permissions")
    if argument not in chat.manager.names("permission"):
        known = ", ".join(chat.manager.names("permission"))
        raise AvoError(f"no permission mode {argument!r}; modes: {known}")
    core.switch(permission_mode=argument)
    chat.print(f"permission mode {argument} from the next turn", style="ok")


def instructions(chat: ChatContext, argument: str) -> None:
    """Show the instructions in effect, add TEXT to them (this chat), or ``clear`` yours."""
    core = chat.chat
    if argument == "clear":
        core.overrides.instructions.clear()
        chat.print("your added instructions are cleared", style="dim")
        return
    if argument:
        core.overrides.instructions.append(argument)
        chat.print("added to the system prompt from the next turn", style="ok")
        return
    lines = []
    if chat.config.system_prompt:
        lines.append(f"system prompt (avo.toml): {chat.config.system_prompt}")
    for text in core.overrides.instructions:
        lines.append(f"added here: {text}")
    for name in ("AGENTS.md", "CLAUDE.md", ".avo/instructions.md"):
        if (chat.workspace / name).is_file():
            lines.append(f"workspace file: {name} (read by the instructions bundle when enabled)")
    chat.print("\n".join(lines) or "no instructions (/instructions TEXT adds some)")


__all__ = ["instructions", "model", "permissions", "provider"]
