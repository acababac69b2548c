"""A tool's progress reaches the run's log when the run executes on Temporal (real dev server).

The test tool (``append_line`` with ``progress``) reports its steps with
``avo.tool_progress.report_progress`` from its thread on the worker, as an MCP
tool relays its server's notifications. The ``tool_progress`` events must be
in the store while the call still runs (a reader such as ``avo runs inspect``
or the web UI sees them), carry the payloads a run driven in process records,
come between the call's ``tool_started`` and its result, and leave the effect
done once. And the workflow's history must replay: the progress signals lead
to the same decisions (what is recorded, what is written when) on a replay,
where a worker rebuilds the run's state after a crash.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from temporal_fleet import Fleet, submit

from avo.compose import open_store
from avo.events import AgentEvent, EventType, RunLogState


async def _events(fleet: Fleet, run_id: str) -> list[AgentEvent]:
    store = open_store(fleet.store)
    try:
        return await store.get_events(run_id)
    finally:
        await store.close()


def _wait_for(fleet: Fleet, run_id: str, kind: EventType) -> list[AgentEvent]:
    deadline = time.monotonic() + 120
    while True:
        events = asyncio.run(_events(fleet, run_id))
        if any(event.event_type is kind for event in events):
            return events
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.1)


def _progress(events: list[AgentEvent]) -> list[dict]:
    return [e.payload for e in events if e.event_type is EventType.TOOL_PROGRESS]


async def _replay(fleet: Fleet, run_id: str) -> None:
    """Replay the run's workflow history on a runtime composed here (as a worker composes it)."""
    from temporalio.client import Client
    from temporalio.worker import Replayer
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    from avo.compose import compose, resolve_config
    from avo_temporal import _context
    from avo_temporal.settings import load_settings
    from avo_temporal.workflow import AvoRunWorkflow

    client = await Client.connect(fleet.address)
    history = await client.get_workflow_handle(run_id).fetch_history()
    resolved = resolve_config(fleet.config, environ={}, cwd=fleet.root, user=False)
    made = compose(resolved=resolved, workspace=str(fleet.root))
    settings = {"address": fleet.address, "task_queue": fleet.queue, "heartbeat_seconds": 2}
    context = _context.WorkerContext(made.runtime, load_settings(settings, {}), made.manager)
    queue = "replay-avo"  # the replayer's task queue: replay-{build_id}
    _context.register(queue, context)
    try:
        runner = SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_all_modules()
        )
        replayer = Replayer(workflows=[AvoRunWorkflow], workflow_runner=runner, build_id="avo")
        await replayer.replay_workflow(history)  # raises on a nondeterministic replay
    finally:
        _context.unregister(queue)
        await made.aclose()


def test_tool_progress_is_in_the_log_while_the_call_runs(
    fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = tmp_path / "gate"
    fleet.write_config(calls=1, tool_settings=f', progress = 3, pause = 1.2, gate = "{gate}"')
    fleet.start_worker()
    run_id = asyncio.run(submit(fleet, "omega"))

    # the first step is stored while the tool still waits at the gate
    running = _wait_for(fleet, run_id, EventType.TOOL_PROGRESS)
    kinds = [e.event_type for e in running]
    assert EventType.TOOL_COMPLETED not in kinds and not fleet.effects.exists(), kinds
    started = next(e for e in running if e.event_type is EventType.TOOL_STARTED)
    call_id = started.payload["tool_call_id"]
    assert _progress(running) == [  # the payload a run driven in process records
        {
            "tool_call_id": call_id,
            "name": "append_line",
            "progress": 1.0,
            "total": 3.0,
            "message": "omega 0: step 1",
        }
    ]
    inspected = fleet.avo("runs", "inspect", run_id)
    assert "progress 1/3 omega 0: step 1" in inspected.stdout, inspected.stdout

    gate.touch()
    events = _wait_for(fleet, run_id, EventType.RUN_COMPLETED)
    RunLogState.from_events(run_id, events)  # gapless and valid
    assert len({e.event_id for e in events}) == len(events)
    kinds = [e.event_type for e in events]
    first, last = (
        kinds.index(EventType.TOOL_PROGRESS),
        len(kinds) - kinds[::-1].index(EventType.TOOL_PROGRESS),
    )
    assert (
        kinds.index(EventType.TOOL_STARTED) < first < last <= kinds.index(EventType.TOOL_COMPLETED)
    )
    steps = [(p["progress"], p["message"]) for p in _progress(events)]
    assert steps[0] == (1.0, "omega 0: step 1") and steps[-1] == (3.0, "omega 0: step 3"), steps
    assert steps == sorted(steps), steps  # in the order the tool reported them
    assert {p["tool_call_id"] for p in _progress(events)} == {call_id}
    assert fleet.effects.read_text() == "omega 0\n"  # the effect, once

    monkeypatch.syspath_prepend(str(fleet.plugins))  # the test plugin, as the worker has it
    asyncio.run(_replay(fleet, run_id))


def test_avo_run_on_temporal_prints_the_tool_progress(fleet: Fleet) -> None:
    fleet.write_config(calls=1, tool_settings=", progress = 2, pause = 1.2")
    fleet.start_worker()
    done = fleet.avo("-v", "run", "--json", "sigma", timeout=180)
    assert json.loads(done.stdout)["status"] == "completed", done.stdout
    assert "append_line 1/2 sigma 0: step 1" in done.stderr, done.stderr
    assert "append_line 2/2 sigma 0: step 2" in done.stderr, done.stderr
