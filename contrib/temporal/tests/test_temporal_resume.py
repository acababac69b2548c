"""A run resumed on Temporal gets back what an in-process resume gives it back.

An in-process ``AgentRuntime.resume`` rebuilds the run's per-run state from its
stored log and checkpoint: the approval callback's memory (plan mode's
submitted plan, ``restore_run``), the provider's state (a stateful provider
such as ``fake`` continues its script where the checkpoint says) and the turn's
approvals and answers. These tests drive the same run through real worker
processes on a real dev server, where the worker that continues the run is not
the one that started it:

- the first worker is SIGKILLed while the run waits for a person; a fresh
  worker replays the workflow and continues it after the answer;
- the workflow itself is gone (an operator terminated it): ``avo runs resume``
  starts a new one on a fresh worker, which rebuilds everything from the log
  (and mints ids of its own: numbering from the run's base again would give
  the new model call the id of the run's first call).

Both must end as the in-process run does: the plan still counts (the edit is
not denied), the script continues (no step repeated), the effect happens once.
"""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

from temporal_fleet import Fleet

from avo.compose import open_store
from avo.events import EventType, RunLogState

PLAN = """
tools = ["submit_plan", "ask_user", {{name = "append_line", settings = {{path = "{effects}"}}}}]
[permission]
mode = "plan"
[policy]
max_runtime_seconds = 3600
provider_timeout_seconds = 600
tool_timeout_seconds = 600
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "submit_plan", arguments = {{plan_text = "1. append a line"}}}}
[[provider.settings.script]]
tool_call = {{name = "ask_user", arguments = {{question = "Shall I append it now?"}}}}
[[provider.settings.script]]
tool_call = {{name = "append_line", arguments = {{line = "planned"}}}}
[[provider.settings.script]]
content = "appended as planned"
[store]
location = "{store}"
[engine]
name = "temporal"
[engine.settings]
address = "{address}"
task_queue = "{queue}"
heartbeat_seconds = 2
"""


def _paused_at_the_question(fleet: Fleet) -> str:
    fleet.config.write_text(
        PLAN.format(
            effects=fleet.effects, store=fleet.store, address=fleet.address, queue=fleet.queue
        ),
        encoding="utf-8",
    )
    first = fleet.start_worker()
    done = fleet.avo("run", "--json", "plan, ask, then append", check=False, timeout=180)
    assert done.returncode == 3, done.stdout + done.stderr + fleet.logs()  # paused
    paused = json.loads(done.stdout)
    assert paused["waiting"][0]["kind"] == "question", paused
    first.send_signal(signal.SIGKILL)  # the worker that knows the plan is gone
    first.wait()
    return str(paused["run_id"])


async def _events(fleet: Fleet, run_id: str) -> list:
    store = open_store(fleet.store)
    try:
        return await store.get_events(run_id)
    finally:
        await store.close()


async def _wait_until_ended(fleet: Fleet, run_id: str, timeout: float = 120) -> Any:
    store = open_store(fleet.store)
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            head = await store.get_run(run_id)
            if head is not None and head.state.value in {"completed", "failed", "cancelled"}:
                return head
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"run {run_id} is {head and head.state.value}")
            await asyncio.sleep(0.2)
    finally:
        await store.close()


def _ended_as_in_process(fleet: Fleet, run_id: str) -> None:
    head = asyncio.run(_wait_until_ended(fleet, run_id))
    assert head.output == "appended as planned", fleet.logs()
    events = asyncio.run(_events(fleet, run_id))
    RunLogState.from_events(run_id, events)  # gapless and valid
    assert len({e.event_id for e in events}) == len(events)  # no id minted twice
    decided = [
        (e.event_type.value, e.payload["name"])
        for e in events
        if e.event_type in (EventType.TOOL_APPROVED, EventType.TOOL_DENIED)
    ]
    # the plan still counted on the worker that continued: the append was not denied
    assert decided == [
        ("tool_approved", "submit_plan"),
        ("tool_approved", "ask_user"),
        ("tool_approved", "append_line"),
    ], fleet.logs()
    # the provider's script went on from the checkpoint: no step asked for twice
    calls = [e.payload["name"] for e in events if e.event_type is EventType.TOOL_STARTED]
    assert calls == ["submit_plan", "ask_user", "append_line"], calls
    assert events[-1].event_type is EventType.RUN_COMPLETED
    assert fleet.effects.read_text() == "planned\n"  # once


def test_a_fresh_worker_continues_a_paused_run_with_its_plan_and_script(fleet: Fleet) -> None:
    run_id = _paused_at_the_question(fleet)
    fleet.start_worker()  # replays the workflow: nothing is called again
    answered = fleet.avo("runs", "answer", run_id, "yes, go", check=False, timeout=180)
    assert answered.returncode == 0, answered.stderr + fleet.logs()
    _ended_as_in_process(fleet, run_id)


def test_a_new_workflow_resumes_the_run_from_its_log(fleet: Fleet) -> None:
    from temporalio.client import Client

    run_id = _paused_at_the_question(fleet)

    async def terminate() -> None:  # an operator ends the workflow (temporal workflow terminate)
        client = await Client.connect(fleet.address)
        await client.get_workflow_handle(run_id).terminate(reason="test: workflow gone")

    asyncio.run(terminate())
    refused = fleet.avo("runs", "answer", run_id, "yes, go", check=False)
    assert refused.returncode != 0 and "resume it first" in refused.stderr, refused.stderr
    fleet.start_worker()  # a worker that never saw this run
    resumed = fleet.avo("runs", "resume", run_id, "--json", check=False, timeout=180)
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr + fleet.logs()  # asks again
    answered = fleet.avo("runs", "answer", run_id, "yes, go", check=False, timeout=180)
    assert answered.returncode == 0, answered.stderr + fleet.logs()
    _ended_as_in_process(fleet, run_id)
    kinds = [e.event_type for e in asyncio.run(_events(fleet, run_id))]
    assert kinds.count(EventType.RUN_RESUMED) == 2  # the new workflow's resume, the answer's


def test_an_approved_rerun_in_a_new_workflow_runs_the_call_again(fleet: Fleet) -> None:
    import time

    from temporal_fleet import submit
    from temporalio.client import Client

    fleet.write_config(calls=1, delay=30.0)  # the append stops halfway for 30 s
    first = fleet.start_worker()
    run_id = asyncio.run(submit(fleet, "omega"))
    deadline = time.monotonic() + 90
    while not (fleet.effects.exists() and fleet.effects.read_text() == "omega 0"):
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)  # cut mid-effect: the ledger says 'started'
    first.wait()
    fleet.write_config(calls=1, delay=0.0)
    fleet.start_worker()
    asyncio.run(_wait_until_paused(fleet, run_id))  # outcome unknown: a person decides

    async def terminate() -> None:
        client = await Client.connect(fleet.address)
        await client.get_workflow_handle(run_id).terminate(reason="test: workflow gone")

    asyncio.run(terminate())
    resumed = fleet.avo("runs", "resume", run_id, "--json", check=False, timeout=180)
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr + fleet.logs()  # still asks
    approved = fleet.avo("runs", "approve", run_id, "--reason", "it did not happen")
    assert approved.returncode == 0
    head = asyncio.run(_wait_until_ended(fleet, run_id))
    assert head.state.value == "completed", fleet.logs()
    # the new workflow's dispatch came after the ledger's: the call ran again, once
    assert fleet.effects.read_text() == "omega 0omega 0\n"
    events = asyncio.run(_events(fleet, run_id))
    RunLogState.from_events(run_id, events)
    assert len({e.event_id for e in events}) == len(events)


async def _wait_until_paused(fleet: Fleet, run_id: str, timeout: float = 120) -> None:
    store = open_store(fleet.store)
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            head = await store.get_run(run_id)
            events = await store.get_events(run_id)
            paused = head is not None and head.state.value == "paused"
            if paused and events[-1].payload.get("to_state") == "paused":
                return
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"run {run_id} is {head and head.state.value}")
            await asyncio.sleep(0.2)
    finally:
        await store.close()
