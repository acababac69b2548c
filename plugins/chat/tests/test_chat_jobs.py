"""/jobs, /job and /cancel on a run another process left interrupted, over a pipe."""

from __future__ import annotations

import asyncio
from pathlib import Path

from chat_kit import Place
from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider
from avo.models import ModelResponse, ToolCall
from avo.tools import FunctionTool
from avo_sqlite import SQLiteEventStore

CONFIG = """
[provider]
name = "fake"

[[provider.settings.script]]
content = "ok"

[store]
location = "chat.db"
"""


class NapArgs(BaseModel):
    seconds: float


async def _interrupted_run(db: Path) -> str:
    """A run stopped by an interrupt in the middle of a tool call: resumable, not finished."""
    started = asyncio.Event()

    async def nap(args: NapArgs) -> str:
        started.set()
        await asyncio.sleep(args.seconds)
        return "rested"

    tool = FunctionTool(name="nap", description="sleep", arguments_model=NapArgs, function=nap)
    script = [ModelResponse(tool_call=ToolCall(name="nap", arguments={"seconds": 60}))]
    async with SQLiteEventStore(db) as store:
        runtime = AgentRuntime(provider=FakeProvider(script), tools=[tool], event_store=store)
        driving = asyncio.ensure_future(runtime.run("take a long nap"))
        await started.wait()
        runtime.interrupt("stopped by the test")
        result = await driving
    return result.run_id


def test_job_shows_and_cancel_ends_an_interrupted_run(place: Place) -> None:
    place.config(CONFIG)
    run_id = asyncio.run(_interrupted_run(place.workspace / "chat.db"))
    short = run_id[:8]
    entries = f"/jobs\n/job {short}\n/cancel\n/cancel {short}\n/job {short}\n/cancel {short}\n"
    done = place.pipe("chat", stdin=entries + "/quit\n")
    both = done.stdout + done.stderr
    assert f"{short}  interrupted" in done.stdout, both  # /jobs
    assert "state    interrupted" in done.stdout and "take a long nap" in done.stdout, both
    assert "give the run to cancel: /cancel RUN" in both  # /cancel without a run
    assert f"cancelled {short} (cancelled)" in done.stdout, both
    assert "state    cancelled / user_cancelled" in done.stdout, both  # /job afterwards
    assert "there is nothing to cancel" in both  # the second /cancel
    assert [r["state"] for r in place.runs() if r["run_id"] == run_id] == ["cancelled"]
