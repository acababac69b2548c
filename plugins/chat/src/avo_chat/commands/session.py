"""Session commands: /new /sessions /session /resume /branch /undo /clear /compact
/history /export /draft."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from avo.exceptions import AvoError, SessionError
from avo_chat import sessions
from avo_chat.chat import check_not_busy, last_state
from avo_chat.screen import shorten

if TYPE_CHECKING:
    from avo_chat.slash import ChatContext

COMPACT_PROMPT = (
    "Summarise our conversation so far for your own later use: the goal, what was decided, "
    "what was done (files changed, commands run, results), what is still open, and anything "
    "I asked you to remember. Be complete but brief; use short bullet points. Do not call tools."
)


async def _record(chat: ChatContext) -> Any:
    if chat.session_id is None:
        return None
    return await sessions.session_store(chat.chat).get_session(chat.session_id)


async def new(chat: ChatContext, argument: str) -> None:
    """Leave this session for a new one (this one stays: /resume comes back)."""
    from avo.models import new_id

    check_not_busy(chat.chat, "/new")
    session_id = new_id()
    if argument:
        await sessions.session_store(chat.chat).create_session(session_id, title=argument)
    previous = chat.session_id
    await sessions.switch_to(chat.chat, None, new_id=session_id)
    chat.print(
        f"new session {session_id[:8]}"
        + (f" (the previous one is {previous[:8]}: /resume {previous[:8]})" if previous else ""),
        style="dim",
    )


async def sessions_(chat: ChatContext, argument: str) -> None:
    """Every session in this store, most recent first."""
    listed = await sessions.session_store(chat.chat).list_sessions()
    if not listed:
        chat.print("no sessions yet")
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False)
    for column in ("", "session", "updated", "turns", "last turn", "title"):
        table.add_column(column, overflow="fold")
    for record in listed[:50]:
        run = await chat.store.get_run(record.last_run_id) if record.last_run_id else None
        mark = "▶" if record.session_id == chat.session_id else ""
        table.add_row(
            mark,
            record.session_id[:8],
            f"{record.updated_at:%Y-%m-%d %H:%M}",
            str(len(record.run_ids)),
            last_state(run) if run else "-",
            shorten(record.title or "(untitled)", 60),
        )
    chat.show(table)


async def session(chat: ChatContext, argument: str) -> None:
    """This session: id, title, turns and their state, the model."""
    record = await _record(chat)
    lines = [f"session {chat.session_id}", f"model {chat.chat.model_label()}"]
    if record is None:
        lines.append("no turns yet")
    else:
        lines.insert(1, f"title {record.title or '(untitled)'}")
        lines.append(f"started {record.created_at:%Y-%m-%d %H:%M}, {len(record.run_ids)} turns:")
        for number, run_id in enumerate(
            record.run_ids[-10:], start=max(1, len(record.run_ids) - 9)
        ):
            run = await chat.store.get_run(run_id)
            task = shorten(run.task.split("\n\n<attached", 1)[0], 60) if run else "?"
            lines.append(f"  {number:>3}. {run_id[:8]} {last_state(run):<11} {task}")
    chat.print("\n".join(lines))


async def resume(chat: ChatContext, argument: str) -> None:
    """Switch to another session (a number from /sessions' order, an id or a prefix)."""
    check_not_busy(chat.chat, "/resume")
    listed = await sessions.session_store(chat.chat).list_sessions()
    wanted = argument
    if not wanted:
        others = [s for s in listed if s.session_id != chat.session_id][:9]
        if not others:
            raise SessionError("there is no other session to resume (/new starts one)")
        for number, record in enumerate(others, start=1):
            chat.print(f"  {number}. {record.session_id[:8]}  {shorten(record.title, 60)}")
        reply = (await chat.ask("which session? (number or id, Enter: none)") or "").strip()
        if not reply:
            return
        wanted = (
            others[int(reply) - 1].session_id
            if reply.isdigit() and 0 < int(reply) <= len(others)
            else reply
        )
    record = await sessions.find_session(chat.chat, wanted)
    await sessions.switch_to(chat.chat, record)


async def branch(chat: ChatContext, argument: str) -> None:
    """Fork this session after turn TURN (default: the last); you continue in the fork."""
    from avo.ops.sessions import fork_session

    check_not_busy(chat.chat, "/branch")
    record = await _record(chat)
    if record is None or not record.run_ids:
        raise SessionError("/branch needs a turn to branch from; this session has none yet")
    turns = len(record.run_ids)
    at = turns
    if argument:
        if not argument.isdigit() or not 1 <= int(argument) <= turns:
            raise SessionError(f"/branch {argument}: give a turn number from 1 to {turns}")
        at = int(argument)
    fork = await fork_session(chat.store, record.session_id, record.run_ids[at - 1])
    await sessions.switch_to(chat.chat, fork)
    chat.print(
        f"branched session {record.session_id[:8]} after turn {at} into {fork.session_id[:8]}; "
        f"you are in the branch (/resume {record.session_id[:8]} goes back)",
        style="ok",
    )


async def undo(chat: ChatContext, argument: str) -> None:
    """Restore the files the last turn changed and drop that turn from the session."""
    from avo.ops.sessions import rewind_session

    check_not_busy(chat.chat, "/undo")
    record = await _record(chat)
    if record is None or not record.run_ids:
        raise SessionError("nothing to undo: this session has no turns yet")
    run_id = record.run_ids[-1]
    journal = chat.chat.journal
    touched = journal.describe(run_id)
    conflicts = journal.conflicts(run_id)
    force = False
    if conflicts:
        chat.print("changed since the turn ended: " + ", ".join(conflicts), style="warn")
        force = await chat.confirm("restore them anyway (your later changes are lost)?")
    report = journal.restore(run_id, force=force)
    if report.conflicts:
        raise SessionError(
            "undo stopped: " + ", ".join(report.conflicts) + " changed since the turn; "
            "nothing was restored or dropped"
        )
    previous = record.run_ids[-2] if len(record.run_ids) > 1 else None
    await rewind_session(chat.store, record.session_id, previous)
    done = [f"restored {p}" for p in report.restored] + [f"removed {p}" for p in report.removed]
    for path, why in report.failed.items():
        done.append(f"could not restore {path}: {why}")
    if not touched:
        done.append("the turn changed no files this chat recorded")
    chat.print("\n".join(done), style="ok")
    chat.print(f"dropped turn {run_id[:8]} from the session (it stays in the store)", style="dim")
    await sessions.switch_to(chat.chat, await _record(chat))


async def clear(chat: ChatContext, argument: str) -> None:
    """The next turn starts with no context (the session and its runs stay)."""
    check_not_busy(chat.chat, "/clear")
    record = await _record(chat)
    clear_screen = getattr(chat.chat.screen, "clear", None)
    if clear_screen is not None:
        clear_screen()
    if record is None or record.last_run_id is None:
        chat.print("context cleared", style="dim")
        return
    await sessions.session_store(chat.chat).save_session_transcript(
        record.session_id, record.last_run_id, []
    )
    chat.chat.usage.last_input = 0
    chat.chat.refresh_status()
    chat.print(
        "context cleared: the next turn starts fresh (/undo, /branch still work)", style="dim"
    )


def _tail(messages: list[dict[str, Any]], turns: int) -> list[dict[str, Any]]:
    """The last ``turns`` exchanges, starting at a user message."""
    if turns <= 0:
        return []
    starts = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not starts:
        return []
    return messages[starts[max(0, len(starts) - turns)] :]


def _size(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages) // 4


async def compact(chat: ChatContext, argument: str) -> None:
    """Summarise the conversation with the model; keep the last N turns as they are (1)."""
    check_not_busy(chat.chat, "/compact")
    keep = 1
    if argument:
        if not argument.isdigit():
            raise AvoError(f"/compact {argument}: give the number of recent turns to keep, e.g. 2")
        keep = int(argument)
    record = await _record(chat)
    if record is None or not record.transcript:
        raise SessionError("nothing to compact: the next turn starts with no context already")
    before = [m for m in record.transcript if m.get("role") != "system"]
    result = await chat.chat.turn(COMPACT_PROMPT)
    if result is None or result.status.value != "completed" or not result.output:
        raise SessionError("the summary turn did not complete; the context is unchanged")
    summary = {
        "role": "user",
        "content": "A summary of our conversation so far (the earlier messages were compacted):"
        f"\n\n{result.output}",
    }
    ack = {"role": "assistant", "content": "Understood; I will continue from this summary."}
    kept = [summary, ack, *_tail(before, keep)]
    await sessions.session_store(chat.chat).save_session_transcript(
        record.session_id, result.run_id, kept
    )
    chat.print(
        f"compacted: {len(before)} messages (~{_size(before):,} tokens) -> {len(kept)} "
        f"messages (~{_size(kept):,} tokens)",
        style="ok",
    )


def history(chat: ChatContext, argument: str) -> None:
    """What you typed in this workspace (matching QUERY), newest last."""
    from avo_chat.state import read_history

    entries = read_history(chat.chat.history_path)
    if argument:
        entries = [e for e in entries if argument.lower() in e.lower()]
    if not entries:
        chat.print("nothing in the history" + (f" matching {argument!r}" if argument else ""))
        return
    chat.print("\n".join(shorten(e, 120) for e in entries[-20:]))


async def export(chat: ChatContext, argument: str) -> None:
    """Write the session (every turn, its tool calls and answers) as Markdown."""
    from avo.events import EventType

    record = await _record(chat)
    if record is None or not record.run_ids:
        raise SessionError("nothing to export: this session has no turns yet")
    lines = [f"# {record.title or 'avo chat session'}", "", f"Session `{record.session_id}`", ""]
    for number, run_id in enumerate(record.run_ids, start=1):
        run = await chat.store.get_run(run_id)
        if run is None:
            continue
        lines += [f"## Turn {number}", "", "**You:** " + run.task, ""]
        for event in await chat.store.get_events(run_id):
            if event.event_type is EventType.TOOL_STARTED:
                lines.append(f"- `{event.payload.get('name')}` {event.payload.get('arguments')}")
        lines += ["", "**avo:** " + (run.output or f"({last_state(run)})"), ""]
    target = _write(chat, argument or f"avo-session-{record.session_id[:8]}.md", lines)
    chat.print(f"wrote {target}", style="ok")


def _write(chat: ChatContext, name: str, lines: list[str]) -> Path:
    target = Path(name).expanduser()
    if not target.is_absolute():
        target = chat.workspace / target
    target.write_text("\n".join(lines), encoding="utf-8")
    return target


def draft(chat: ChatContext, argument: str) -> None:
    """``save TEXT`` keeps a prompt (the next chat starts with it typed), ``show``, ``clear``."""
    drafts = chat.chat.drafts
    verb, _, text = argument.partition(" ")
    if verb in ("", "show"):
        kept = drafts.read()
        chat.print(kept if kept else "no draft (/draft save TEXT keeps one)")
    elif verb == "save":
        if not text.strip():
            raise AvoError("/draft save needs the TEXT to keep")
        drafts.save(text)
        chat.print("draft saved: the next chat starts with it in the input", style="dim")
    elif verb == "clear":
        drafts.clear()
        chat.print("draft cleared", style="dim")
    else:
        raise AvoError(f"/draft {verb}: use show, save TEXT or clear")


__all__ = [
    "branch",
    "clear",
    "compact",
    "draft",
    "export",
    "history",
    "new",
    "resume",
    "session",
    "sessions_",
    "undo",
]
