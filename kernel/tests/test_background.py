import asyncio

import pytest

from avo.background import (
    BackgroundJobManager,
    JobNotFoundError,
    JobStatus,
    render_job_detail,
    render_job_row,
)
from avo.exceptions import AvoError
from avo.redaction import Redactor


async def test_jobs_succeed_fail_and_cancel():
    manager = BackgroundJobManager(redactor=Redactor(environ={"SVC_TOKEN": "tok-123456"}))
    gate = asyncio.Event()

    async def ok() -> int:
        return 42

    async def bad() -> None:
        raise RuntimeError("failed with tok-123456")

    async def slow() -> None:
        await gate.wait()

    j1 = manager.submit(ok(), name="ok")
    j2 = manager.submit(bad(), name="bad")
    j3 = manager.submit(slow(), name="slow")
    assert (await manager.wait(j1.job_id)).result == 42
    assert (await manager.wait(j2.job_id)).status is JobStatus.FAILED
    assert j2.error == "RuntimeError: failed with ***"
    assert not j3.done and j3.duration_seconds is None
    assert manager.cancel(j3.job_id)
    assert (await manager.wait(j3.job_id)).status is JobStatus.CANCELLED
    assert manager.cancel(j1.job_id) is False
    assert [j.name for j in manager.jobs()] == ["ok", "bad", "slow"]
    row = render_job_row(j1)
    assert j1.job_id in row and "succeeded" in row and row.endswith("ok")
    detail = render_job_detail(j2)
    assert "status:   failed" in detail and "error:    RuntimeError" in detail
    assert "result:   42" in render_job_detail(j1)


async def test_limits_unknown_ids_and_shutdown():
    manager = BackgroundJobManager(max_jobs=1)
    never = asyncio.Event()
    job = manager.submit(never.wait(), name="w")

    async def extra() -> None:
        return None

    with pytest.raises(AvoError, match="max_jobs=1"):
        manager.submit(extra(), name="x")
    with pytest.raises(JobNotFoundError, match="nope"):
        manager.get("nope")
    await manager.shutdown()
    assert job.status is JobStatus.CANCELLED
