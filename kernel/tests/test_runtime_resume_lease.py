"""AgentRuntime.resume holds the run's lease while it drives (issue 13, item 1, kernel side).

A real SQLite store; the cross-process race is in tests/test_hardening_concurrent_resume.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, ModelResponse, RunState, ToolCall
from avo.exceptions import LeaseError, RunBusyError, UnsafeResumeError

avo_sqlite = pytest.importorskip("avo_sqlite", reason="lease tests need a store with leases")


class Crash(BaseException):
    """Stands in for the process dying."""


class Args(BaseModel):
    n: int = 0


def _script() -> list[Any]:
    return [
        ModelResponse(tool_call=ToolCall(tool_call_id="c1", name="wait", arguments={"n": 1})),
        ModelResponse(content="done"),
    ]


async def _paused_run(store: Any) -> str:
    """A run whose first model call crashed the process: resumable from its checkpoint."""
    runtime = AgentRuntime(provider=FakeProvider([Crash()]), event_store=store)
    with pytest.raises(Crash):
        await runtime.run("go", run_id="run-1")
    return "run-1"


async def test_a_second_resume_is_refused_naming_the_holder(tmp_path: Path) -> None:
    store = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")
    other = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")  # another connection, like a process
    try:
        run_id = await _paused_run(store)
        inside, release = asyncio.Event(), asyncio.Event()

        async def wait(args: Args) -> str:
            inside.set()
            await release.wait()
            return "ok"

        tool = FunctionTool(name="wait", description="Wait.", arguments_model=Args, function=wait)
        first = AgentRuntime(provider=FakeProvider(_script()), tools=[tool], event_store=store)
        driving = asyncio.ensure_future(first.resume(run_id, lease_owner="worker-a"))
        await inside.wait()
        second = AgentRuntime(provider=FakeProvider(_script()), tools=[tool], event_store=other)
        with pytest.raises(RunBusyError, match="is being driven by worker-a") as refused:
            await second.resume(run_id)
        assert refused.value.owner == "worker-a" and isinstance(refused.value, LeaseError)
        # Skipping the lease does not help: the log shows a call in flight, so resuming
        # is refused before anything is written.
        with pytest.raises(UnsafeResumeError):
            await second.resume(run_id, lease=False)
        release.set()
        result = await driving
        assert result.status is RunState.COMPLETED
        assert first.event_store is store  # the fenced view was only borrowed
        assert await store.get_lease(run_id) is None  # released when done
    finally:
        await store.close()
        await other.close()
