"""Asking the answerer in place, while anyone else may answer the same pause.

A run paused for a person asks its answerer (a terminal prompt, a chat) for
each open request. While an answerer that waits (returns an awaitable) is
waiting, the run gives up its lease (:func:`avo.ops.leases.lease_given_up`),
so ``avo runs approve|deny|answer`` from another shell can record an answer,
and watches its log for one (reading only the events after the last one it
saw: :func:`avo.storage.base.events_after`). Whichever answer is recorded
first wins, once:

- an answer recorded elsewhere first cancels the prompt; the answerer is told
  (its ``notice(text)``, if it has one) and the run continues here;
- an answer given at the prompt first is recorded once the lease is back,
  unless the log shows an answer that arrived meanwhile: then that one stands
  and the prompt is told its answer was not recorded;
- if another process resumed the run meanwhile, this one stops following it
  (:class:`~avo.exceptions.RunBusyError`), writing nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from avo._run_context import _RunContext
from avo.approval import Answer, Answerer, HumanRequest
from avo.events import AgentEvent, EventType
from avo.exceptions import RunBusyError

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime

POLL_SECONDS = 0.2
"""How often a waiting run looks at its log for an answer given elsewhere."""


class _Elsewhere(RunBusyError):
    """The run was continued by another process while this one waited."""


def _tell(answerer: Any, text: str) -> None:
    notice = getattr(answerer, "notice", None)
    if callable(notice):
        notice(text)


def describe(payload: dict[str, Any]) -> str:
    """``approved by ana (via cli)``: what a recorded answer said, in a few words."""
    decision = payload.get("decision")
    what = {"approve": "approved", "deny": "denied", "reply": "answered"}.get(
        str(decision), str(decision)
    )
    text = payload.get("text") if decision == "reply" else payload.get("reason")
    via = payload.get("via")
    return (
        f"{what} by {payload.get('by') or 'someone'}"
        + (f" via {via}" if via and via != "runtime" else "")
        + (f": {text}" if text else "")
    )


async def catch_up(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Fold answers recorded by others since the run last wrote into ``ctx``.

    Raises :class:`_Elsewhere` when the log holds anything else new (another
    process resumed the run).
    """
    from avo.storage.base import events_after

    for event in await events_after(rt.event_store, ctx.run_id, ctx.log.last_sequence):
        if not _an_answer(ctx, event):
            raise _Elsewhere(event.event_type.value)
        ctx.log.apply(event)
        ctx.answers[str(event.payload["tool_call_id"])] = dict(event.payload)


def _an_answer(ctx: _RunContext, event: AgentEvent) -> bool:
    call_id = event.payload.get("tool_call_id")
    return (
        event.event_type is EventType.HUMAN_INPUT_RECEIVED
        and call_id in ctx.asked
        and call_id not in ctx.answers
    )


async def _watch(rt: AgentRuntime, ctx: _RunContext, call_id: str) -> None:
    """Return once an answer to ``call_id`` is recorded elsewhere (raise _Elsewhere: resumed)."""
    while call_id not in ctx.answers:
        await asyncio.sleep(POLL_SECONDS)
        await catch_up(rt, ctx)


async def _race(
    rt: AgentRuntime, ctx: _RunContext, prompt: asyncio.Future[Any], call_id: str
) -> None:
    """Wait for the prompt or an answer recorded elsewhere, whichever comes first."""
    watch = asyncio.ensure_future(_watch(rt, ctx, call_id))
    try:
        await asyncio.wait({prompt, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (prompt, watch):
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
    if watch.done() and not watch.cancelled() and watch.exception() is not None:
        raise watch.exception()  # type: ignore[misc]


async def ask_one(
    rt: AgentRuntime,
    ctx: _RunContext,
    answerer: Answerer,
    request: HumanRequest,
    given: Awaitable[Answer | None],
) -> Answer | None:
    """The answer the prompt gave for ``request``, or None (nobody answered, or it was
    answered elsewhere: ``ctx.answers`` then holds that answer)."""
    from avo.ops.leases import busy_error, current_holder, lease_given_up

    call_id = request.tool_call_id
    mine: Answer | None = None
    try:
        async with lease_given_up(rt.event_store) as released:
            if not released:  # no lease to give up (no other writer can answer meanwhile)
                return await given
            prompt = asyncio.ensure_future(given)  # asks once the lease is free
            await _race(rt, ctx, prompt, call_id)
            if not prompt.cancelled():
                mine = prompt.result()  # (KeyboardInterrupt / EOFError: the run stays paused)
        await catch_up(rt, ctx)  # the lease is back: answers that arrived meanwhile
    except _Elsewhere:
        holder = await current_holder(rt.event_store, ctx.run_id)
        _tell(answerer, f"run {ctx.run_id} was resumed elsewhere; stopping here")
        if holder is not None:
            raise busy_error(ctx.run_id, holder, "follow") from None
        raise RunBusyError(
            f"run {ctx.run_id} was resumed by another process while this one waited for a "
            f"person; see it with: avo runs inspect {ctx.run_id}",
            run_id=ctx.run_id,
        ) from None
    other = ctx.answers.get(call_id)
    if other is not None:
        if mine is not None:
            _tell(answerer, f"not recorded: call {call_id} was already {describe(other)}")
        else:
            _tell(answerer, f"call {call_id} was {describe(other)}")
        return None
    return Answer.coerce(mine) if mine is not None else None


def is_waiting(given: object) -> bool:
    """True when an answerer returned something to await (it may wait for a person)."""
    return inspect.isawaitable(given)


__all__ = ["POLL_SECONDS", "ask_one", "catch_up", "describe", "is_waiting"]
