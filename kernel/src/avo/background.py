"""Background jobs: run coroutines beside the REPL and track them.

``BackgroundJobManager.submit(coro, name=...)`` starts an asyncio task and
returns a :class:`Job` record that follows it (``running`` → ``succeeded`` /
``failed`` / ``cancelled``). :func:`render_job_row` and
:func:`render_job_detail` back the REPL's ``/jobs``, ``/job ID`` and
``/cancel ID``. A failed job's error text is redacted like a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from avo.exceptions import AvoError
from avo.models import new_id, utc_now
from avo.redaction import Redactor


class JobStatus(StrEnum):
    """Where a background job is in its life."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class JobNotFoundError(AvoError):
    """No job with the given id."""


@dataclass
class Job:
    """One background job and its outcome."""

    job_id: str
    name: str
    status: JobStatus = JobStatus.RUNNING
    created_at: datetime = field(default_factory=utc_now)
    finished_at: datetime | None = None
    result: Any = None
    error: str | None = None

    @property
    def done(self) -> bool:
        """True once the job succeeded, failed or was cancelled."""
        return self.status is not JobStatus.RUNNING

    @property
    def duration_seconds(self) -> float | None:
        """Wall time from submit to finish (None while running)."""
        if self.finished_at is None:
            return None
        return (self.finished_at - self.created_at).total_seconds()


class BackgroundJobManager:
    """Starts, tracks and cancels background coroutines (at most ``max_jobs`` running)."""

    def __init__(self, *, max_jobs: int = 16, redactor: Redactor | None = None) -> None:
        if max_jobs < 1:
            raise ValueError(f"max_jobs must be >= 1, got {max_jobs}")
        self.max_jobs = max_jobs
        self._redactor = redactor or Redactor()
        self._jobs: dict[str, Job] = {}
        self._tasks: dict[str, asyncio.Task[Any]] = {}

    def submit(self, coro: Coroutine[Any, Any, Any], *, name: str = "job") -> Job:
        """Start ``coro`` as a background task; must be called inside a running loop."""
        running = sum(1 for job in self._jobs.values() if not job.done)
        if running >= self.max_jobs:
            coro.close()
            raise AvoError(
                f"{running} background jobs are already running (max_jobs={self.max_jobs}); "
                "wait for one to finish or cancel one"
            )
        job = Job(job_id=new_id()[:8], name=name)
        self._jobs[job.job_id] = job
        task = asyncio.get_running_loop().create_task(self._drive(job, coro), name=name)
        self._tasks[job.job_id] = task
        task.add_done_callback(lambda _task: self._settle(job, coro))
        return job

    @staticmethod
    def _settle(job: Job, coro: Coroutine[Any, Any, Any]) -> None:
        # A task cancelled before its first step never enters _drive.
        if not job.done:
            coro.close()
            job.status = JobStatus.CANCELLED
            job.finished_at = utc_now()

    async def _drive(self, job: Job, coro: Coroutine[Any, Any, Any]) -> None:
        try:
            job.result = await coro
            job.status = JobStatus.SUCCEEDED
        except asyncio.CancelledError:
            job.status = JobStatus.CANCELLED
            raise
        except Exception as exc:
            job.status = JobStatus.FAILED
            job.error = self._redactor.text(f"{type(exc).__name__}: {exc}")
        finally:
            job.finished_at = utc_now()

    def get(self, job_id: str) -> Job:
        """The job with ``job_id``."""
        try:
            return self._jobs[job_id]
        except KeyError:
            raise JobNotFoundError(f"no background job {job_id!r}; see /jobs") from None

    def jobs(self) -> list[Job]:
        """Every job, oldest first."""
        return list(self._jobs.values())

    def cancel(self, job_id: str) -> bool:
        """Request cancellation; False when the job had already finished."""
        job = self.get(job_id)
        if job.done:
            return False
        return self._tasks[job_id].cancel()

    async def wait(self, job_id: str) -> Job:
        """Wait for the job to finish (whatever its outcome) and return it."""
        self.get(job_id)
        with contextlib.suppress(asyncio.CancelledError):
            await self._tasks[job_id]
        return self._jobs[job_id]

    async def shutdown(self) -> None:
        """Cancel every running job and wait for all of them."""
        for job_id, task in self._tasks.items():
            if not self._jobs[job_id].done:
                task.cancel()
        for task in list(self._tasks.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task


def render_job_row(job: Job) -> str:
    """One ``/jobs`` line: id, status, name and duration."""
    duration = f"{job.duration_seconds:.1f}s" if job.duration_seconds is not None else "-"
    return f"{job.job_id:<8}  {job.status.value:<9}  {duration:>7}  {job.name}"


def render_job_detail(job: Job) -> str:
    """The ``/job ID`` view: every field, plus the result or error."""
    lines = [
        f"job:      {job.job_id}",
        f"name:     {job.name}",
        f"status:   {job.status.value}",
        f"started:  {job.created_at.isoformat()}",
        f"finished: {job.finished_at.isoformat() if job.finished_at else '-'}",
    ]
    if job.error is not None:
        lines.append(f"error:    {job.error}")
    elif job.status is JobStatus.SUCCEEDED:
        lines.append(f"result:   {job.result!r}")
    return "\n".join(lines)


__all__ = [
    "BackgroundJobManager",
    "Job",
    "JobNotFoundError",
    "JobStatus",
    "render_job_detail",
    "render_job_row",
]
