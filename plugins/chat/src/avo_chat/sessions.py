"""The chat's session: which one it is, what it holds, and continuing it after a restart.

A chat session is a kernel session (:mod:`avo.sessions`): the store keeps its
runs in order and the transcript the next run starts from. Opening one shows
a short recap; a turn left interrupted (Ctrl-C, a closed terminal, a crash) or
waiting for an answer is continued first. The provider and model the last
turn used are taken up again, so a ``/model`` switch is part of the session.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from avo.exceptions import SessionError
from avo.state import is_terminal
from avo_chat.screen import shorten

if TYPE_CHECKING:
    from avo.sessions import SessionRecord
    from avo_chat.chat import Chat


def session_store(chat: Chat) -> Any:
    """The store's sessions (SessionError naming the store when it keeps none)."""
    from avo.sessions import require_session_store

    return require_session_store(chat.store)


async def find_session(chat: Chat, wanted: str | None) -> SessionRecord:
    """The session ``wanted`` names (an id or a unique prefix), or the latest one."""
    listed = await session_store(chat).list_sessions()
    if not listed:
        raise SessionError("there is no chat session in this store yet; start one with avo chat")
    if wanted is None:
        return listed[0]
    exact = [s for s in listed if s.session_id == wanted]
    found = exact or [s for s in listed if s.session_id.startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise SessionError(
            f"no session {wanted!r} in this store; /sessions (or avo sessions list) shows them",
            session_id=wanted,
        )
    ids = ", ".join(s.session_id[:12] for s in found[:5])
    raise SessionError(f"{wanted!r} matches several sessions ({ids}); give more of the id")


async def open_session(chat: Chat) -> None:
    """Pick the chat's session at start (new, named, or the latest) and greet it."""
    from avo.models import new_id
    from avo.sessions import check_session_id

    options = chat.options
    store = session_store(chat)
    if options.latest:  # avo resume [SESSION], avo chat --continue
        record = await find_session(chat, options.session)
    elif options.session:
        record = await store.get_session(check_session_id(options.session))
        if record is None:
            chat.session_id = options.session
            chat.screen.say(f"new session {options.session}", style="dim")
            return
    else:
        chat.session_id = new_id()
        return
    await enter(chat, record)


async def enter(chat: Chat, record: SessionRecord) -> None:
    """Make ``record`` the chat's session: recap, take up its model, continue a paused turn."""
    chat.session_id = record.session_id
    chat.usage.models.clear()
    chat.usage.runs.clear()
    for run_id in record.run_ids:
        chat.usage.add_all(await chat.store.get_events(run_id))
    await _take_up_model(chat, record)
    await recap(chat, record)
    unfinished = await unfinished_run(chat)
    if unfinished is not None and chat.options.resume_paused:
        await chat.continue_run(unfinished)


async def _take_up_model(chat: Chat, record: SessionRecord) -> None:
    """Use the provider and model the session's last turn used (unless flags say otherwise)."""
    from avo.ops.resume import recorded_config

    if not record.run_ids or chat.options.provider or chat.options.model:
        return
    try:
        resolved, _ = await recorded_config(chat.store, record.run_ids[-1], environ=chat.environ)
    except Exception:  # a run without a recorded composition: keep the configured model
        return
    provider = resolved.config.provider
    if provider is None:
        return
    model = provider.settings.get("model")
    current = chat.config.provider
    same = current is not None and current.name == provider.name
    if same and (model is None or current.settings.get("model") == model):
        return
    try:
        chat.switch(provider=provider.name, model=model if isinstance(model, str) else None)
    except Exception as exc:
        chat.screen.say(
            f"kept {chat.model_label()}: the session's {provider.name} fails ({exc})", style="warn"
        )
        return
    chat.screen.say(f"model {chat.model_label()} (as the session's last turn)", style="dim")


async def recap(chat: Chat, record: SessionRecord) -> None:
    """A few lines: the session's title, turns, and its last exchange."""
    turns = len(record.run_ids)
    chat.screen.say(
        f"session {record.session_id[:8]} · {record.title or '(untitled)'} · "
        f"{turns} turn{'s' if turns != 1 else ''}",
        style="dim",
    )
    messages = [m for m in record.transcript if m.get("role") in ("user", "assistant")]
    for message in messages[-2:]:
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            who = "you" if message["role"] == "user" else "avo"
            chat.screen.say(f"  {who}: {shorten(content, 100)}", style="dim")


async def unfinished_run(chat: Chat) -> str | None:
    """The session's last run if it did not finish and nobody drives it (else None)."""
    from avo.ops.status import LIVE, run_status

    if chat.session_id is None:
        return None
    record = await session_store(chat).get_session(chat.session_id)
    if record is None or record.last_run_id is None:
        return None
    run = await chat.store.get_run(record.last_run_id)
    if run is None or is_terminal(run.state):
        return None
    status = await run_status(chat.store, run)
    if status.activity == LIVE:
        raise SessionError(
            f"session {chat.session_id[:8]} is busy: its turn {run.run_id[:8]} is being driven "
            f"by {status.holder.describe() if status.holder else 'another process'}",
            session_id=chat.session_id,
        )
    return run.run_id


async def sync_provider_state(chat: Chat) -> None:
    """Continue a stateful provider (the scripted fake) where the session's last run left it.

    Only for a last run another runtime drove (a resume, another process): the
    chat's own provider already stands where its runs left it.
    """
    runtime = chat.runtime
    restore = getattr(runtime.provider, "restore_state", None)
    if restore is None or chat.session_id is None:
        return
    record = await session_store(chat).get_session(chat.session_id)
    if record is None or record.last_run_id is None or record.last_run_id in chat.ours:
        return  # this runtime's provider drove that run: it already stands there
    checkpoint = await chat.store.get_latest_checkpoint(record.last_run_id)
    state = getattr(checkpoint, "provider_metadata", None)
    if state:
        # another provider drove that run (a /model switch): nothing to continue
        with contextlib.suppress(ValueError, TypeError, KeyError):
            restore(dict(state))


async def switch_to(chat: Chat, record: SessionRecord | None, *, new_id: str | None = None) -> None:
    """Leave the current session for ``record`` (or a new one named ``new_id``)."""
    if record is None:
        chat.session_id = new_id
        chat.usage.models.clear()
        chat.usage.runs.clear()
        chat.usage.last_input = 0
        chat.refresh_status()
        return
    await enter(chat, record)
    chat.refresh_status()


__all__ = [
    "enter",
    "find_session",
    "open_session",
    "recap",
    "session_store",
    "switch_to",
    "sync_provider_state",
    "unfinished_run",
]
