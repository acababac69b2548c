"""The ``temporal`` engine: submit runs as workflows, relay operations as signals, serve workers."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

from pydantic import JsonValue

from avo.engines import RunSubmission, WorkerOptions
from avo.exceptions import EngineError, EngineRunGoneError
from avo_temporal.connection import connect
from avo_temporal.settings import TemporalSettings, load_settings

NAME = "temporal"

TASK_TIMEOUT = timedelta(seconds=60)
"""How long one workflow task may take before Temporal hands it to another worker.

A workflow task includes the run's store writes (local activities). A task
handed over while its first worker still runs it could write what the
workflow's history never records, so the limit is generous (Temporal's
maximum is 120 s); a killed worker's tasks move on after it.
"""


class TemporalEngine:
    """Runs as Temporal workflows (id = run id) on ``avo worker --engine temporal`` processes."""

    name = NAME
    remote = True

    def __init__(
        self, settings: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None
    ) -> None:
        self.environ = os.environ if environ is None else environ
        self.settings: TemporalSettings = load_settings(settings, self.environ)
        self._client: Any = None

    async def client(self) -> Any:
        """The connected client (one per engine object)."""
        if self._client is None:
            self._client = await connect(self.settings)
        return self._client

    async def submit(self, submission: RunSubmission, *, task_queue: str | None = None) -> str:
        """Start the run's workflow on the task queue; return the run id (= workflow id)."""
        from temporalio.common import WorkflowIDReusePolicy
        from temporalio.exceptions import WorkflowAlreadyStartedError

        from avo_temporal.bundles import check_submission
        from avo_temporal.workflow import WORKFLOW

        check_submission(submission.resolved)  # refused before anything is submitted
        client = await self.client()
        job = {
            "run_id": submission.run_id,
            "task": submission.task,
            "system_prompt": submission.system_prompt,
            "user_state": dict(submission.user_state),
            "session_id": submission.session_id,
            "stream": submission.stream,
        }
        try:
            await client.start_workflow(
                WORKFLOW,
                job,
                id=submission.run_id,
                task_queue=task_queue or self.settings.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                task_timeout=TASK_TIMEOUT,
            )
        except WorkflowAlreadyStartedError:
            raise EngineError(
                f"run {submission.run_id} already has a workflow; give a new run id",
                engine=NAME,
                run_id=submission.run_id,
            ) from None
        return submission.run_id

    async def signal(self, run_id: str, operation: str, payload: Mapping[str, JsonValue]) -> None:
        """Send ``operation`` to the run's workflow (a resume restarts a workflow that is gone)."""
        from temporalio.service import RPCError, RPCStatusCode

        client = await self.client()
        handle = client.get_workflow_handle(run_id)
        try:
            await handle.signal(operation, dict(payload))
        except RPCError as exc:
            if exc.status is not RPCStatusCode.NOT_FOUND:
                raise EngineError(
                    f"could not signal run {run_id}'s workflow ({operation}): {exc}", engine=NAME
                ) from None
            if operation != "resume":  # (avo.ops.cancel ends such a run in the store itself)
                raise EngineRunGoneError(
                    f"run {run_id} has no running workflow on {self.settings.address} "
                    f"(namespace {self.settings.namespace!r}); resume it first "
                    f"(avo runs resume {run_id}) so a worker drives it again",
                    engine=NAME,
                    run_id=run_id,
                ) from None
            await self._restart(client, run_id, payload)

    async def _restart(self, client: Any, run_id: str, payload: Mapping[str, JsonValue]) -> None:
        """Start a new workflow that resumes the run (its ``fail_open_tool_calls`` goes along)."""
        from temporalio.common import WorkflowIDReusePolicy

        from avo_temporal.workflow import WORKFLOW

        await client.start_workflow(
            WORKFLOW,
            {
                "run_id": run_id,
                "resume": True,
                "fail_open_tool_calls": bool(payload.get("fail_open_tool_calls")),
            },
            id=run_id,
            task_queue=self.settings.task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            task_timeout=TASK_TIMEOUT,
        )

    async def stopped_driving(self, run_id: str) -> str | None:
        """None while the run's workflow runs; else how it ended (failed, terminated, ...).

        Asked now and then by whoever follows the run in the store, so a workflow
        that ends before its run does (its first task failed, an operator
        terminated it) is reported instead of waited for.
        """
        from temporalio.api.enums.v1 import WorkflowExecutionStatus
        from temporalio.client import WorkflowFailureError
        from temporalio.service import RPCError, RPCStatusCode

        handle = (await self.client()).get_workflow_handle(run_id)
        try:
            described = await handle.describe()
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                return f"no workflow {run_id} on {self.settings.address}"
            return None  # the server does not answer now: ask again later
        status = described.raw_description.workflow_execution_info.status
        if status in (
            WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING,
            WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW,
        ):
            return None
        name = WorkflowExecutionStatus.Name(status).removeprefix("WORKFLOW_EXECUTION_STATUS_")
        why = f"its workflow {name.lower().replace('_', ' ')}"
        try:
            await handle.result()
        except WorkflowFailureError as exc:
            cause = exc.cause
            while getattr(cause, "cause", None) is not None:
                cause = cause.cause  # the innermost: the error the run's code raised
            detail = " ".join(str(cause or exc).split())
            if detail:
                why += f": {detail[:300]}"
        except Exception:  # the status alone still says what happened
            pass
        return why

    async def stream_text(
        self, run_id: str, *, every: float = 0.25
    ) -> AsyncIterator[tuple[str, str]]:
        """``(call, text so far)`` of the run's streaming model calls, until its workflow ends.

        Read from the model activities' heartbeats (a worker streams a call when
        the run was submitted with ``stream``), so the text arrives in pieces at
        most a second apart; a call that ends between two looks shows only
        what it had streamed by the last one (its whole answer is in the run).
        A retried call starts over under a new key.
        """
        from temporalio.api.enums.v1 import WorkflowExecutionStatus
        from temporalio.service import RPCError, RPCStatusCode

        from avo_temporal.activities import MODEL

        client = await self.client()
        handle = client.get_workflow_handle(run_id)
        while True:
            try:
                described = await handle.describe()
            except RPCError as exc:
                if exc.status is not RPCStatusCode.NOT_FOUND:
                    raise EngineError(
                        f"could not follow run {run_id}'s workflow: {exc}", engine=NAME
                    ) from None
                await asyncio.sleep(every)  # not started yet
                continue
            for pending in described.raw_description.pending_activities:
                if pending.activity_type.name != MODEL or not pending.heartbeat_details.payloads:
                    continue
                values = await client.data_converter.decode(pending.heartbeat_details.payloads)
                text = values[0].get("text") if values and isinstance(values[0], dict) else None
                if isinstance(text, str) and text:
                    yield f"{pending.activity_id}:{pending.attempt}", text
            if described.raw_description.workflow_execution_info.status != (
                WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
            ):
                return
            await asyncio.sleep(every)

    async def serve(self, options: WorkerOptions) -> None:
        """Compose this worker's runtime from ``options``; poll the task queue until cancelled."""
        from avo.gc_tuning import tune_gc_for_server
        from avo_temporal import _context
        from avo_temporal.activities import AvoActivities
        from avo_temporal.bundles import check_worker
        from avo_temporal.effects import ledger_for
        from avo_temporal.run_bundles import WorkerBundles
        from avo_temporal.worker import build_worker

        client = await self.client()
        queue = options.task_queue or self.settings.task_queue
        made = await _compose(options)
        try:
            check_worker(made.runtime)  # a bundle whose parts cannot cross to the workflow
        except BaseException:
            await made.aclose()
            raise
        store_table = made.config.store
        store_settings = getattr(store_table, "settings", None) or {}
        ledger = ledger_for(made.store_location, made.event_store, dict(store_settings))
        activities: AvoActivities | None = None
        try:
            activities = AvoActivities(
                made.runtime,
                made.event_store,
                ledger,
                self.settings.heartbeat_seconds,
                plugins=made.manager,
            )
            activities.bundles = WorkerBundles(
                made.runtime, options.resolved.environ, options.workspace
            )
            _context.register(
                queue,
                _context.WorkerContext(
                    made.runtime,
                    self.settings,
                    made.manager,
                    provider_state=activities.initial_provider_state,
                ),
            )
            worker = build_worker(
                client,
                queue,
                activities,
                concurrency=options.concurrency,
                stop_seconds=getattr(options, "stop_seconds", None),
            )
            # started: freeze the runtime and the Temporal SDK too (avo worker froze the CLI's)
            tune_gc_for_server(options.resolved.environ)
            await worker.run()
        finally:
            _context.unregister(queue)
            with contextlib.suppress(Exception):
                if activities is not None:  # the runs' MCP servers stop with the worker
                    await activities.bundles.close_all()
            with contextlib.suppress(Exception):
                await ledger.close()
            await made.aclose()


async def _compose(options: WorkerOptions, attempts: int = 10) -> Any:
    """The worker's runtime; a busy store (a SQLite file other workers write) is tried again."""
    from avo.compose import compose
    from avo.exceptions import StorageError

    for attempt in range(1, attempts + 1):
        try:
            return compose(resolved=options.resolved, workspace=options.workspace)
        except StorageError:
            if attempt == attempts:
                raise
            await asyncio.sleep(min(0.2 * 2**attempt, 3.0))
    raise AssertionError("unreachable")


__all__ = ["NAME", "TemporalEngine"]
