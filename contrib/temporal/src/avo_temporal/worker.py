"""The worker of ``avo worker --engine temporal``: the run workflow and its activities."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from avo_temporal.activities import AvoActivities
from avo_temporal.run_bundles import BundleActivities
from avo_temporal.workflow import AvoRunWorkflow

DEFAULT_CONCURRENCY = 100
STREAM_SECONDS = 1.0
WORKFLOW_TASKS = 4


STOP_SECONDS = 10.0
"""Default time calls in flight get to finish once a worker is asked to stop."""


def build_worker(
    client: Any,
    task_queue: str,
    activities: AvoActivities,
    *,
    concurrency: int | None = None,
    stop_seconds: float | None = None,
) -> Worker:
    """A worker polling ``task_queue``: workflows in Temporal's sandbox, activities on this loop.

    The sandbox passes the avo kernel and plugins through (imported once, not per
    workflow): the workflow's determinism comes from the runtime's seams (clock,
    timers, random source, ids), which the workflow sets to Temporal's own.

    Stopping (the ``run()`` task cancelled): no new tasks are taken, the
    activities in flight get ``stop_seconds`` to finish, then they are
    cancelled and hand their calls back (see :func:`avo_temporal.activities.handing_back`).
    """
    limit = concurrency or DEFAULT_CONCURRENCY
    runner = SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_all_modules()
    )
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AvoRunWorkflow],
        activities=[
            activities.model,
            activities.tool,
            activities.store_call,
            BundleActivities(activities.bundles).bundles_call,
        ],
        workflow_runner=runner,
        max_concurrent_activities=limit,
        # Workflow tasks are CPU work under one GIL: a few at a time each finish fast
        # (many at once all finish late, and a late task is handed to another worker).
        max_concurrent_workflow_tasks=WORKFLOW_TASKS,
        max_cached_workflows=max(100, limit * 4),
        # a streamed answer rides on the model call's heartbeats: send them at most
        # once a second (not every 80% of the heartbeat timeout) while text arrives
        max_heartbeat_throttle_interval=timedelta(seconds=STREAM_SECONDS),
        default_heartbeat_throttle_interval=timedelta(seconds=STREAM_SECONDS),
        graceful_shutdown_timeout=timedelta(
            seconds=STOP_SECONDS if stop_seconds is None else stop_seconds
        ),
    )


__all__ = ["DEFAULT_CONCURRENCY", "STOP_SECONDS", "build_worker"]
