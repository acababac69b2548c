"""``avo runs resume --fail-open-tools`` on a run Temporal drives, against the real dev server.

A tool call cut off mid-effect with no one asked about it (its workflow was
terminated while the tool ran: the log has ``tool_started`` and no result)
cannot be resumed safely. A plain resume is refused, and the run stays as it
was, resumable. With ``--fail-open-tools`` the workflow closes the call with a
failed result saying its effect is unknown, and the run goes on to the end:
whether the flag reaches a workflow still waiting for a signal, or starts a new
workflow because the old one is gone. The call is not run again.

Such a run can also be given up: ``avo runs cancel`` finds no workflow to
signal and ends the run in the store itself, closing the cut-off call with a
failed result, as it cancels an in-process run whose process died.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time

from temporal_fleet import Fleet, submit

from avo.compose import open_store
from avo.events import EventType, RunLogState


async def _events(fleet: Fleet, run_id: str) -> list:
    store = open_store(fleet.store)
    try:
        return await store.get_events(run_id)
    finally:
        await store.close()


def _cut_off(fleet: Fleet) -> str:
    """A run whose tool call started and never got a result; its workflow and worker are gone."""
    from temporalio.client import Client

    fleet.write_config(calls=1, delay=30.0)  # the append stops halfway for 30 s
    first = fleet.start_worker()
    run_id = asyncio.run(submit(fleet, "omega"))
    deadline = time.monotonic() + 90
    while not (fleet.effects.exists() and fleet.effects.read_text() == "omega 0"):
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.05)

    async def terminate() -> None:  # an operator ends the workflow mid-tool
        client = await Client.connect(fleet.address)
        await client.get_workflow_handle(run_id).terminate(reason="test: workflow gone")

    asyncio.run(terminate())
    first.send_signal(signal.SIGKILL)
    first.wait()
    fleet.write_config(calls=1, delay=0.0)
    fleet.start_worker()  # a worker that never saw this run
    return run_id


def _refused_and_untouched(fleet: Fleet, run_id: str) -> list:
    before = asyncio.run(_events(fleet, run_id))
    assert before[-1].event_type is EventType.TOOL_STARTED, [e.event_type for e in before]
    refused = fleet.avo("runs", "resume", run_id, "--json", check=False, timeout=90)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "--fail-open-tools" in refused.stderr, refused.stderr
    assert before[-1].payload["tool_call_id"] in refused.stderr
    assert len(asyncio.run(_events(fleet, run_id))) == len(before)  # still resumable as it was
    return before


def _completed_with_the_call_failed(fleet: Fleet, run_id: str, call_id: str) -> None:
    resumed = fleet.avo(
        "runs", "resume", run_id, "--fail-open-tools", "--json", check=False, timeout=180
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr + fleet.logs()
    assert json.loads(resumed.stdout)["status"] == "completed", resumed.stdout
    events = asyncio.run(_events(fleet, run_id))
    RunLogState.from_events(run_id, events)  # gapless and valid
    assert len({e.event_id for e in events}) == len(events)
    failed = [e for e in events if e.event_type is EventType.TOOL_FAILED]
    assert [e.payload["tool_call_id"] for e in failed] == [call_id]
    assert "may have partly taken effect" in json.dumps(failed[0].payload)
    assert [e.event_type for e in events].count(EventType.TOOL_STARTED) == 1  # not run again
    assert events[-1].event_type is EventType.RUN_COMPLETED
    assert fleet.effects.read_text() == "omega 0"  # the cut-off write, nothing more


def test_fail_open_tools_restarts_a_gone_workflow_with_the_flag(fleet: Fleet) -> None:
    run_id = _cut_off(fleet)
    before = _refused_and_untouched(fleet, run_id)
    _completed_with_the_call_failed(fleet, run_id, before[-1].payload["tool_call_id"])


def test_fail_open_tools_reaches_a_workflow_that_refused_the_plain_resume(fleet: Fleet) -> None:
    from avo_temporal.engine import TemporalEngine

    run_id = _cut_off(fleet)
    before = _refused_and_untouched(fleet, run_id)
    engine = TemporalEngine({"address": fleet.address, "task_queue": fleet.queue}, environ={})

    async def plain_resume_signal() -> None:  # what a relay without the flag sends
        await engine.signal(run_id, "resume", {"fail_open_tool_calls": False})
        handle = (await engine.client()).get_workflow_handle(run_id)
        deadline = time.monotonic() + 90
        while True:  # the new workflow refuses and waits for the next signal
            try:
                if await handle.query("state") == "waiting":
                    return
            except Exception:
                pass
            assert time.monotonic() < deadline, fleet.logs()
            await asyncio.sleep(0.5)

    asyncio.run(plain_resume_signal())
    assert len(asyncio.run(_events(fleet, run_id))) == len(before)
    _completed_with_the_call_failed(fleet, run_id, before[-1].payload["tool_call_id"])


def test_cancel_ends_a_cut_off_run_whose_workflow_is_gone(fleet: Fleet) -> None:
    run_id = _cut_off(fleet)
    before = asyncio.run(_events(fleet, run_id))
    call_id = before[-1].payload["tool_call_id"]
    assert before[-1].event_type is EventType.TOOL_STARTED, [e.event_type for e in before]
    cancelled = fleet.avo(
        "runs", "cancel", run_id, "--reason", "gave up", "--json", check=False, timeout=90
    )
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    result = json.loads(cancelled.stdout)
    assert (result["status"], result["stop_reason"]) == ("cancelled", "user_cancelled"), result
    events = asyncio.run(_events(fleet, run_id))
    RunLogState.from_events(run_id, events)  # gapless and valid
    assert [e.event_id for e in events[: len(before)]] == [e.event_id for e in before]
    failed = [e for e in events if e.event_type is EventType.TOOL_FAILED]
    assert [e.payload["tool_call_id"] for e in failed] == [call_id]
    assert "may have partly taken effect" in json.dumps(failed[0].payload)
    assert "gave up" in json.dumps(failed[0].payload)
    assert events[-1].event_type is EventType.RUN_CANCELLED
    assert fleet.effects.read_text() == "omega 0"  # the call was not run again
    again = fleet.avo("runs", "cancel", run_id, check=False, timeout=90)
    assert again.returncode == 2 and "already finished" in again.stderr, again.stderr
