"""The avo run workflow: the kernel's own state machine, driven inside Temporal.

The workflow builds an :class:`~avo.runtime.AgentRuntime` with
:meth:`~avo.runtime.AgentRuntime.derive` from the worker's composed runtime,
swapping in the activity proxies (:mod:`avo_temporal.proxies`) and
deterministic seams: the workflow clock, timers, random source and ids. Then
it calls ``run`` / ``resume`` like any driver; the kernel's handlers make
every decision, here as in process. A replay (another worker taking over
after a crash) re-executes the same decisions against the recorded activity
results, so the in-memory run state is rebuilt without calling anything again.

Signals carry the kernel's operations (``avo.engines.OPERATIONS``): ``cancel``
ends the run, ``answer`` records a person's answers and continues a paused
run, ``resume`` continues one (with ``fail_open_tool_calls``, after closing
the calls cut off mid-effect with a failed result, as ``avo runs resume
--fail-open-tools`` does in process). The workflow lives until its run is
terminal: a paused run's workflow waits for a signal, and so does one whose
resume was refused (an unsafe resume), so a later resume or cancel reaches it.
A fourth signal, ``progress``, comes from the run's own tool activities: a
running call's progress, which the workflow records (avo_temporal.progress).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from avo.approval import Answer, AnswerKind
    from avo.exceptions import AvoError, BundleError, SessionError
    from avo.models import RunRecord, RunResult
    from avo.ops.cancel import cancel_run
    from avo.ops.resume import close_open_calls
    from avo.sessions import session_store_of
    from avo.state import is_terminal
    from avo_temporal import _context
    from avo_temporal.codec import dump
    from avo_temporal.progress import SIGNAL as PROGRESS
    from avo_temporal.proxies import (
        ActivityProvider,
        ActivityStore,
        ActivityToolRegistry,
        ReplaySafePlugins,
        SessionActivityStore,
        StatefulActivityProvider,
    )
    from avo_temporal.run_bundles import proxies

WORKFLOW = "avo.run"
"""The workflow type name; its id is the avo run id."""

CUT_OFF = "its worker stopped, or its workflow ended, before recording its result"
"""Why a call closed by ``resume --fail-open-tools`` did not finish (the model reads it)."""


class _Ids:
    """Ids numbered within the run: the same on every execution of the workflow code.

    (Temporal's own random seed can change between executions of a workflow
    task; ids made from a counter and the run id cannot.) A workflow that
    resumes a run whose earlier workflow is gone numbers from a base of its
    own (its Temporal run id, ``execution``): starting over from the run's
    base would mint the ids the earlier workflow already gave its events and
    calls.
    """

    def __init__(self, run_id: str, kind: str, execution: str | None = None) -> None:
        name = f"avo-run:{run_id}:{kind}" + (f":{execution}" if execution else "")
        self._base = uuid.uuid5(uuid.NAMESPACE_URL, name)
        self._next = 0

    def __call__(self) -> str:
        self._next += 1
        return str(uuid.uuid5(self._base, str(self._next)))


def _answer(payload: Any) -> Answer:
    if not isinstance(payload, dict):
        return Answer.coerce(payload)
    return Answer(
        AnswerKind(str(payload.get("decision", "approve"))),
        payload.get("reason"),
        payload.get("text"),
        payload.get("by"),
    )


@workflow.defn(name=WORKFLOW)
class AvoRunWorkflow:
    """One avo run (workflow id = run id)."""

    def __init__(self) -> None:
        self._signals: list[tuple[str, dict[str, Any]]] = []
        self._runtime: Any = None
        self._store: ActivityStore | None = None
        self._tools: ActivityToolRegistry | None = None
        self._driving = False

    def _build(self, run_id: str, *, stream: bool = False, resumed: bool = False) -> Any:
        context = _context.lookup(workflow.info().task_queue)
        real = context.runtime
        settings = context.settings
        # writes ride on the next model/tool activity; sessions if the worker's store keeps them
        keeps_sessions = session_store_of(real.event_store) is not None
        store = self._store = (SessionActivityStore if keeps_sessions else ActivityStore)()
        options: dict[str, Any] = {
            "timeout": settings.model_timeout_seconds,
            "heartbeat": settings.heartbeat_seconds,
            "stream": stream,
        }
        provider = (
            ActivityProvider(real.provider, store, **options)
            if context.provider_state is None
            else StatefulActivityProvider(
                real.provider, store, initial=context.provider_state, **options
            )
        )
        tools = self._tools = ActivityToolRegistry(
            real.tools,
            store,
            run_id=run_id,
            timeout=real.policy.tool_timeout_seconds,
            heartbeat=settings.heartbeat_seconds,
            resumed=resumed,
        )
        # a run's bundles are set up on a worker, through an activity (run_bundles), not here
        remote = {"bundles": proxies(real.bundles, tools)} if real.bundles else {}
        rt = real.derive(
            **remote,
            provider=provider,
            tools=tools,
            event_store=store,
            clock=workflow.now,
            sleep=asyncio.sleep,
            stream_callback=None,
            answerer=None,
            **({"plugins": ReplaySafePlugins(context.plugins)} if context.plugins else {}),
        )
        execution = workflow.info().run_id if resumed else None
        rt.call_ids = _Ids(run_id, "call", execution)
        rt.event_ids = _Ids(run_id, "event", execution)
        rt.timer = workflow.time
        rt.random = random.Random(f"avo-run:{run_id}").random  # backoff jitter
        rt.engine = {"name": "temporal", "settings": settings.public()}
        return rt

    async def _drive(self, driving: Any) -> RunResult:
        self._driving = True
        try:
            result = await driving
        finally:
            self._driving = False
        await self._sync()
        return result  # type: ignore[no-any-return]

    async def _sync(self) -> None:
        """Apply the run's pending store writes (the run stopped driving: nothing carries them)."""
        if self._store is not None:
            await self._store.sync()

    @workflow.run
    async def run(self, job: dict[str, Any]) -> dict[str, Any]:
        run_id = str(job["run_id"])
        resumed = bool(job.get("resume"))
        rt = self._runtime = self._build(run_id, stream=bool(job.get("stream")), resumed=resumed)
        if resumed:
            try:
                result = await self._resume(rt, run_id, job)
            except AvoError as exc:  # e.g. an unsafe resume: the workflow waits for a signal
                workflow.logger.warning("run %s: resume refused: %s", run_id, exc)
                await self._sync()
                result = await self._head_result(rt, run_id)
        else:
            try:
                result = await self._drive(
                    rt.run(
                        str(job["task"]),
                        run_id=run_id,
                        system_prompt=job.get("system_prompt"),
                        user_state=dict(job.get("user_state") or {}),
                        session_id=job.get("session_id"),
                    )
                )
            except (SessionError, BundleError) as exc:  # refused before the run existed
                raise ApplicationError(
                    str(exc), type=type(exc).__name__, non_retryable=True
                ) from None

        while not is_terminal(result.status):
            await workflow.wait_condition(lambda: bool(self._signals))
            operation, payload = self._signals.pop(0)
            try:
                result = await self._operate(rt, run_id, operation, payload, result)
                await self._sync()
            except AvoError as exc:  # e.g. an unsafe resume: the run waits for the next signal
                workflow.logger.warning("run %s: %s refused: %s", run_id, operation, exc)
        return dump(result)  # type: ignore[no-any-return]

    async def _operate(
        self, rt: Any, run_id: str, operation: str, payload: dict[str, Any], result: RunResult
    ) -> RunResult:
        if operation == "cancel":
            head = await rt.event_store.get_run(run_id)
            if head is None or is_terminal(head.state):
                return result
            return await cancel_run(rt, head, str(payload.get("reason") or "cancelled"))  # type: ignore[no-any-return]
        if operation == "answer":
            answers = {key: _answer(value) for key, value in dict(payload["answers"]).items()}
            return await self._drive(rt.resume(run_id, answers=answers, lease=False))
        if operation == "resume":
            return await self._resume(rt, run_id, payload)
        return result

    async def _resume(self, rt: Any, run_id: str, request: dict[str, Any]) -> RunResult:
        """Continue the run; ``fail_open_tool_calls`` first closes calls cut off mid-effect."""
        if request.get("fail_open_tool_calls"):
            closed = await close_open_calls(rt, run_id, why=CUT_OFF)
            if closed:
                workflow.logger.info("run %s: closed open tool calls %s", run_id, closed)
        return await self._drive(rt.resume(run_id, lease=False))

    async def _head_result(self, rt: Any, run_id: str) -> RunResult:
        """The result the run's head describes (a resume refused before it drove anything)."""
        head: RunRecord | None = await rt.event_store.get_run(run_id)
        if head is None:
            raise ApplicationError(f"run {run_id} is not in the store", non_retryable=True)
        return RunResult(
            run_id=run_id,
            status=head.state,
            stop_reason=head.stop_reason,
            output=head.output,
            error=head.error,
            steps=head.steps,
            token_usage=head.token_usage,
            token_accounting_available=head.token_accounting_available,
        )

    @workflow.signal(name="cancel")
    def cancel(self, payload: dict[str, Any]) -> None:
        """End the run: now if it is being driven, else once the workflow reads the signal."""
        if self._driving and self._runtime is not None:
            self._runtime.cancel(str(payload.get("reason") or "cancelled"))
            return
        self._signals.append(("cancel", dict(payload)))

    @workflow.signal(name="answer")
    def answer(self, payload: dict[str, Any]) -> None:
        """A person's answers to the paused run's requests: record them and continue."""
        self._signals.append(("answer", dict(payload)))

    @workflow.signal(name="resume")
    def resume(self, payload: dict[str, Any]) -> None:
        """Continue a run that stopped without finishing (``fail_open_tool_calls``: see _resume)."""
        self._signals.append(("resume", dict(payload)))

    @workflow.signal(name=PROGRESS)
    def progress(self, payload: dict[str, Any]) -> None:
        """A running tool call's progress, from its activity (see avo_temporal.progress)."""
        if self._tools is not None:
            self._tools.progress(dict(payload))

    @workflow.query(name="state")
    def state(self) -> str:
        """Whether the workflow is driving its run now (``driving``) or waiting (``waiting``)."""
        return "driving" if self._driving else "waiting"


__all__ = ["WORKFLOW", "AvoRunWorkflow"]
