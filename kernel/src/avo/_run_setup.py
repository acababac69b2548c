"""What a run needs around the loop (internal): its session, its bundles, its seam.

``AgentRuntime.run`` / ``resume`` call :func:`prepare` before the run's first
event and close what it opened when the run ends; the handlers only ever see
``ctx.seam`` (None for a run with no shapers, so the loop pays nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from avo._seam import RunSeam
from avo.bundles import BundleRun, OpenBundles, open_bundles
from avo.exceptions import SessionError
from avo.sessions import check_session_id, require_session_store, title_of
from avo.shaping import ordered
from avo.state import is_terminal

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.runtime import AgentRuntime

logger = logging.getLogger("avo.runtime")


@dataclass
class RunSetup:
    """A run's session (if any) and opened bundles; :meth:`close` when the run ends."""

    session_id: str | None = None
    carried: list[dict[str, JsonValue]] = field(default_factory=list)
    session_record: dict[str, JsonValue] | None = None
    bundles: OpenBundles | None = None

    def payload(self) -> dict[str, JsonValue]:
        """What the run's first event (or its resume event) records about the setup."""
        data: dict[str, JsonValue] = {}
        if self.session_record is not None:
            data["session"] = self.session_record
        if self.bundles is not None and self.bundles.record:
            data["bundles"] = list(self.bundles.record)
        return data

    async def close(self) -> None:
        """Close the bundles (reverse order)."""
        if self.bundles is not None:
            await self.bundles.close()


async def _session_start(rt: AgentRuntime, session_id: str, task: str) -> RunSetup:
    check_session_id(session_id)
    store = require_session_store(rt.event_store)
    record = await store.get_session(session_id)
    info: dict[str, JsonValue] = {"session_id": session_id}
    carried: list[dict[str, JsonValue]] = []
    if record is None:
        await store.create_session(session_id, title=title_of(task))
        info["position"] = 1
    else:
        last = record.last_run_id
        info["position"] = len(record.run_ids) + 1
        if last is not None:
            head = await rt.event_store.get_run(last)
            if head is not None and not is_terminal(head.state):
                raise SessionError(
                    f"session {session_id!r} is busy: its run {last} is {head.state.value}; "
                    f"resume it (avo runs resume {last}) or cancel it before continuing",
                    session_id=session_id,
                )
            if record.transcript_run_id == last:
                carried = list(record.transcript)
            else:  # the last run's process ended before saving: use its last checkpoint
                checkpoint = await rt.event_store.get_latest_checkpoint(last)
                carried = list(checkpoint.messages) if checkpoint is not None else []
            info["continues"] = last
    while carried and carried[0].get("role") == "system":
        carried.pop(0)
    info["carried_messages"] = len(carried)
    return RunSetup(session_id=session_id, carried=carried, session_record=info)


async def prepare(
    rt: AgentRuntime,
    *,
    run_id: str,
    task: str,
    session_id: str | None,
    resumed: bool,
) -> RunSetup:
    """Load the session's transcript (new runs) and set up the bundles."""
    if session_id is not None and not resumed:
        setup = await _session_start(rt, session_id, task)
    else:
        setup = RunSetup(session_id=session_id)
    if rt._bundles:
        run = BundleRun(
            run_id=run_id,
            resumed=resumed,
            session_id=session_id,
            event_store=rt.event_store,
            environ=rt._environ,
            workspace=Path(rt.workspace) if rt.workspace is not None else Path.cwd(),
            task=task,
            redactor=rt.redactor,
            provider=rt.provider,
            approval_callback=rt._approval_callback,
        )
        setup.bundles = await open_bundles(rt, rt._bundles, run)
    return setup


def make_seam(
    rt: AgentRuntime, setup: RunSetup, states: Mapping[str, JsonValue] | None = None
) -> RunSeam | None:
    """The run's request seam, or None when nothing shapes its requests."""
    shapers = list(rt._shapers)
    if setup.bundles is not None:
        shapers += setup.bundles.shapers
    if not shapers:
        return None
    return RunSeam(
        ordered(shapers), window=rt.context_window, session_id=setup.session_id, states=states
    )


class RunScope:
    """Everything set up around one ``run``/``resume`` call, undone when it returns.

    Used as ``async with runtime._lock, RunScope(runtime) as scope:``; on exit
    (normal or not) it saves the session's transcript when the run ended,
    stops accepting steering messages and closes the bundles in reverse order.
    """

    def __init__(self, rt: AgentRuntime) -> None:
        self.rt = rt
        self.setup = RunSetup()
        self.ctx: _RunContext | None = None

    async def __aenter__(self) -> RunScope:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        ctx = self.ctx
        try:
            if ctx is not None:
                self.rt._steering.stop(ctx.run_id)
                await finish_session(self.rt, ctx)
        finally:
            await self.setup.close()

    async def prepare(
        self, run_id: str, task: str, session_id: str | None, *, resumed: bool
    ) -> RunSetup:
        """Load the session's transcript (a new run) and set up the bundles."""
        self.setup = await prepare(
            self.rt, run_id=run_id, task=task, session_id=session_id, resumed=resumed
        )
        return self.setup

    def attach(self, ctx: _RunContext, states: Mapping[str, JsonValue] | None = None) -> None:
        """Give the run its seam and session, and accept steering messages for it."""
        self.ctx = ctx
        ctx.session_id = self.setup.session_id
        ctx.seam = make_seam(self.rt, self.setup, states)
        self.rt._steering.start(ctx.run_id)

    async def created(self, ctx: _RunContext) -> None:
        """The run's first event is stored: add the run to its session."""
        if ctx.session_id is not None:
            store = require_session_store(self.rt.event_store)
            await store.add_session_run(ctx.session_id, ctx.run_id)


async def finish_session(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Save the transcript the session's next run starts from (the run is terminal)."""
    if ctx.session_id is None or not is_terminal(ctx.run.state):
        return
    seam: RunSeam | None = ctx.seam
    messages = seam.carry(ctx.messages) if seam is not None else list(ctx.messages)
    try:
        store = require_session_store(rt.event_store)
        await store.add_session_run(ctx.session_id, ctx.run_id)
        await store.save_session_transcript(ctx.session_id, ctx.run_id, messages)
    except Exception:
        logger.exception(
            "run %s ended but its session %s could not save its transcript; the next run "
            "continues from the run's last checkpoint",
            ctx.run_id,
            ctx.session_id,
        )


def session_of(events: list[Any]) -> str | None:
    """The session id a run's RUN_CREATED event names, or None."""
    if not events:
        return None
    session = events[0].payload.get("session")
    if isinstance(session, dict):
        value = session.get("session_id")
        return value if isinstance(value, str) else None
    return None


__all__ = ["RunScope", "RunSetup", "finish_session", "make_seam", "prepare", "session_of"]
