"""Run commands: /inspect, /replay, /jobs, /job, /cancel (the kernel operations of ``avo runs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo.exceptions import AvoError
from avo_chat.chat import last_state
from avo_chat.screen import shorten

if TYPE_CHECKING:
    from avo_chat.slash import ChatContext


async def _run_id(chat: ChatContext, argument: str) -> str:
    """RUN (an id or a unique prefix), else the session's last turn."""
    from avo_chat.sessions import session_store

    if not argument:
        record = (
            await session_store(chat.chat).get_session(chat.session_id) if chat.session_id else None
        )
        if record is None or record.last_run_id is None:
            raise AvoError("this session has no turns yet; give a RUN id (avo runs list)")
        return record.last_run_id
    if await chat.store.get_run(argument) is not None:
        return argument
    matches = [r.run_id for r in await chat.store.list_runs() if r.run_id.startswith(argument)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise AvoError(f"no run {argument!r} in this store (avo runs list shows them)")
    raise AvoError(f"{argument!r} matches {len(matches)} runs; give more of the id")


async def inspect(chat: ChatContext, argument: str) -> None:
    """The trace of RUN (default: the last turn): every event, as ``avo runs inspect``."""
    from avo.tracing import TraceInspector

    run_id = await _run_id(chat, argument)
    trace = await TraceInspector(chat.store).inspect(run_id)
    chat.print(trace.to_text())


async def replay(chat: ChatContext, argument: str) -> None:
    """Re-drive RUN offline through today's code and report the first difference."""
    from avo.ops import replay as replay_run

    run_id = await _run_id(chat, argument)
    report = await replay_run(chat.store, run_id, environ=chat.environ)
    if report.ok:
        chat.print(f"replay of {run_id[:8]}: {report.compared} events match", style="ok")
    else:
        assert report.divergence is not None
        chat.print(f"replay of {run_id[:8]} differs: {report.divergence.describe()}", style="warn")
    for note in report.notes:
        chat.print(f"note: {note}", style="dim")


async def jobs(chat: ChatContext, argument: str) -> None:
    """Runs in this store that are working, interrupted or waiting for a person."""
    from avo.ops import pending_requests, run_status
    from avo.state import is_terminal

    rows = []
    for run in await chat.store.list_runs():
        if is_terminal(run.state):
            continue
        status = await run_status(chat.store, run)
        waiting = await pending_requests(chat.store, run.run_id)
        what = "; ".join(r.summary() for r in waiting)
        label = status.label if not waiting else "waiting for a person"
        rows.append(f"{run.run_id[:8]}  {label:<22} {shorten(run.task, 50)}  {what}".rstrip())
    if not rows:
        chat.print("no run is working, interrupted or waiting")
        return
    chat.print("\n".join(rows[:30]))
    chat.print(
        "continue one: avo runs resume RUN (this session's: type a message or /resume)",
        style="dim",
    )


async def job(chat: ChatContext, argument: str) -> None:
    """One run (default: the last turn): who drives it, its steps and tokens, what it waits for."""
    from avo.ops import pending_requests, run_status

    run_id = await _run_id(chat, argument)
    run = await chat.store.get_run(run_id)
    assert run is not None  # _run_id found it
    status = await run_status(chat.store, run)
    usage = run.token_usage
    lines = [
        f"run      {run.run_id}",
        f"state    {status.label}"
        + (f" / {run.stop_reason.value}" if run.stop_reason is not None else ""),
        f"task     {shorten(run.task, 70)}",
        f"steps    {run.steps}   tokens {usage.input_tokens} in, {usage.output_tokens} out",
        f"updated  {run.updated_at:%Y-%m-%d %H:%M:%S} UTC",
    ]
    if run.error:
        lines.append(f"error    {shorten(run.error, 70)}")
    elif run.output:
        lines.append(f"answer   {shorten(run.output, 70)}")
    chat.print("\n".join(lines))
    for request in await pending_requests(chat.store, run_id):
        verb = "approve|deny" if request.kind.value == "approval" else "answer"
        chat.print(f"waiting  {request.summary()}", style="warn")
        chat.print(f"         avo runs {verb} {run_id[:8]} {request.tool_call_id}", style="dim")


async def cancel(chat: ChatContext, argument: str) -> None:
    """End RUN for good (cancelled by the user), as ``avo runs cancel``; needs the id."""
    from avo.ops import cancel as cancel_run

    if not argument.strip():
        raise AvoError(
            "give the run to cancel: /cancel RUN (/jobs lists them); "
            "Ctrl-C stops this chat's own turn and keeps it resumable"
        )
    run_id = await _run_id(chat, argument.strip())
    result = await cancel_run(
        chat.store, run_id, reason="cancelled from the chat", environ=chat.environ
    )
    chat.print(f"cancelled {run_id[:8]} ({result.status.value})", style="ok")


__all__ = ["cancel", "inspect", "job", "jobs", "last_state", "replay"]
