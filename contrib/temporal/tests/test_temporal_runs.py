"""Runs as Temporal workflows, end to end: real dev server, real worker processes, real store."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from temporal_fleet import Fleet, submit

from avo.compose import open_store
from avo.engines import engine_record
from avo.events import EventType, RunLogState


async def _events(fleet: Fleet, run_id: str) -> list:
    store = open_store(fleet.store)
    try:
        return await store.get_events(run_id)
    finally:
        await store.close()


def test_avo_run_engine_temporal_drives_the_run_on_a_worker(fleet: Fleet) -> None:
    fleet.start_worker()
    done = fleet.avo("run", "--engine", "temporal", "--json", "alpha", timeout=180)
    result = json.loads(done.stdout)
    assert result["status"] == "completed", fleet.logs()
    assert result["output"] == "alpha done"
    run_id = result["run_id"]
    assert fleet.effects.read_text().splitlines() == ["alpha 0", "alpha 1", "alpha 2"]
    events = asyncio.run(_events(fleet, run_id))
    log = RunLogState.from_events(run_id, events)  # the kernel's invariant checks, in order
    assert log.last_sequence == len(events) == events[-1].sequence
    assert engine_record(events) == {
        "name": "temporal",
        "settings": {
            "address": fleet.address,
            "namespace": "default",
            "task_queue": fleet.queue,
        },
    }
    kinds = [e.event_type for e in events]
    assert kinds.count(EventType.TOOL_COMPLETED) == 3 and kinds[-1] is EventType.RUN_COMPLETED
    inspected = fleet.avo("runs", "inspect", run_id)
    assert "completed" in inspected.stdout


def test_a_session_carries_into_the_workflow(fleet: Fleet) -> None:
    fleet.start_worker()
    first = json.loads(fleet.avo("run", "--json", "--session", "s1", "alpha", timeout=180).stdout)
    assert first["status"] == "completed", fleet.logs()
    # The second run starts from the first one's transcript: the loop model reads the
    # session's first task and its three tool results there, so it just answers.
    second = json.loads(fleet.avo("run", "--json", "--session", "s1", "beta", timeout=180).stdout)
    assert second["status"] == "completed", fleet.logs()
    assert second["output"] == "alpha done"
    created = asyncio.run(_events(fleet, second["run_id"]))[0]
    assert created.payload["session"]["session_id"] == "s1"
    assert created.payload["session"]["continues"] == first["run_id"]
    assert created.payload["session"]["carried_messages"] > 0
    listed = fleet.avo("sessions", "list", "--json").stdout
    (session,) = [s for s in json.loads(listed) if s["session_id"] == "s1"]
    assert session["run_ids"] == [first["run_id"], second["run_id"]], session
    assert fleet.effects.read_text().splitlines() == ["alpha 0", "alpha 1", "alpha 2"]


def test_avo_run_shows_the_answer_as_the_worker_streams_it(fleet: Fleet) -> None:
    fleet.write_config(calls=1, char_delay=0.5)  # "zeta done" takes ~4.5 s to stream
    fleet.start_worker()
    command = [sys.executable, "-c", "import sys; from avo.cli import main; sys.exit(main())"]
    process = subprocess.Popen(
        [*command, "run", "--engine", "temporal", "--no-session", "zeta"],
        cwd=fleet.root,
        env=fleet.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        first = process.stdout.read(1)  # the first character shown
        run_id = _only_run(fleet)
        head = asyncio.run(_head(fleet, run_id))
        # shown while the model call still streams: the run has not recorded its answer
        assert head.state.value not in {"completed", "failed"}, head
        rest, errors = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, errors
    assert (first + rest).decode() == "zeta done\n"  # each character once, then a newline


def _only_run(fleet: Fleet) -> str:
    async def ids() -> list[str]:
        store = open_store(fleet.store)
        try:
            return [run.run_id for run in await store.list_runs()]
        finally:
            await store.close()

    (run_id,) = asyncio.run(ids())
    return run_id


async def _head(fleet: Fleet, run_id: str) -> Any:
    store = open_store(fleet.store)
    try:
        return await store.get_run(run_id)
    finally:
        await store.close()


async def _wait_for(fleet: Fleet, run_id: str, *states: str, timeout: float = 90) -> object:
    store = open_store(fleet.store)
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            head = await store.get_run(run_id)
            if head is not None and head.state.value in states:
                events = await store.get_events(run_id)
                if head.state.value != "paused" or events[-1].payload.get("to_state") == "paused":
                    return head
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"run {run_id} is {head and head.state.value}, not {states}")
            await asyncio.sleep(0.2)
    finally:
        await store.close()


def test_approvals_and_cancel_reach_the_workflow_as_signals(fleet: Fleet) -> None:
    fleet.write_config(calls=1, mode="default")  # modify tools ask a person
    fleet.start_worker()
    first = json.loads(fleet.avo("run", "--json", "beta", check=False, timeout=180).stdout)
    assert first["status"] == "paused" and first["waiting"][0]["kind"] == "approval"
    assert not fleet.effects.exists()
    fleet.avo("runs", "approve", first["run_id"], "--reason", "fine")
    head = asyncio.run(_wait_for(fleet, first["run_id"], "completed"))
    assert head.output == "beta done"  # type: ignore[attr-defined]
    assert fleet.effects.read_text() == "beta 0\n"

    second = json.loads(fleet.avo("run", "--json", "gamma", check=False, timeout=180).stdout)
    assert second["status"] == "paused"
    fleet.avo("runs", "cancel", second["run_id"], "--reason", "not today")
    head = asyncio.run(_wait_for(fleet, second["run_id"], "cancelled"))
    assert head.error == "not today"  # type: ignore[attr-defined]
    events = asyncio.run(_events(fleet, second["run_id"]))
    RunLogState.from_events(second["run_id"], events)
    assert fleet.effects.read_text() == "beta 0\n"  # the denied-by-cancel call never ran


def test_an_unreachable_server_and_bad_settings_are_one_clear_line(
    fleet: Fleet, tmp_path: Path
) -> None:
    from avo_temporal.devserver import free_port

    port = free_port()
    text = fleet.config.read_text().replace(fleet.address, f"127.0.0.1:{port}")
    fleet.config.write_text(text.replace("heartbeat_seconds = 2", "connect_timeout_seconds = 2"))
    done = fleet.avo("run", "--engine", "temporal", "delta", check=False)
    assert done.returncode == 2
    assert f"avo: cannot reach the Temporal server at 127.0.0.1:{port}" in done.stderr
    assert "AVO_TEMPORAL_ADDRESS" in done.stderr
    fleet.config.write_text(text.replace("heartbeat_seconds = 2", "adress = 'x:1'"))
    done = fleet.avo("worker", check=False)
    assert done.returncode == 2 and "adress" in done.stderr and "accepts" in done.stderr
    env_bad = fleet.avo("run", "delta", check=False)
    assert env_bad.returncode == 2


def test_a_worker_killed_mid_call_makes_the_unknown_outcome_a_question_for_a_person(
    fleet: Fleet,
) -> None:
    fleet.write_config(calls=1, delay=30.0)  # the append stops halfway for 30 s
    first = fleet.start_worker()
    run_id = asyncio.run(submit(fleet, "omega"))
    deadline = time.monotonic() + 60
    while not (fleet.effects.exists() and fleet.effects.read_text() == "omega 0"):
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.1)
    first.send_signal(signal.SIGKILL)  # cut mid-effect: half a line written
    first.wait()
    fleet.write_config(calls=1, delay=0.0)
    fleet.start_worker()
    asyncio.run(_wait_for(fleet, run_id, "paused", timeout=120))
    events = asyncio.run(_events(fleet, run_id))
    asked = [e for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert asked and asked[-1].payload["rule"] == "outcome_unknown"
    fleet.avo("runs", "deny", run_id, "--reason", "it already happened")
    asyncio.run(_wait_for(fleet, run_id, "completed"))
    assert fleet.effects.read_text() == "omega 0"  # never run again
    events = asyncio.run(_events(fleet, run_id))
    RunLogState.from_events(run_id, events)
    failed = [e for e in events if e.event_type is EventType.TOOL_FAILED]
    assert "it already happened" in str(failed[0].payload["error"])


def test_a_cancel_during_a_model_call_ends_the_run_cancelled(fleet: Fleet) -> None:
    fleet.write_config(calls=1, latency=60.0)  # the model takes a minute to answer
    fleet.start_worker()
    run_id = asyncio.run(submit(fleet, "kappa"))
    asyncio.run(_wait_for(fleet, run_id, "model_pending"))  # its first write: the call began
    fleet.avo("runs", "cancel", run_id, "--reason", "changed my mind")
    head = asyncio.run(_wait_for(fleet, run_id, "cancelled", timeout=50))  # not after the call
    assert head.error == "changed my mind"  # type: ignore[attr-defined]
    events = asyncio.run(_events(fleet, run_id))
    RunLogState.from_events(run_id, events)  # gapless and valid: nothing written twice
    assert not fleet.effects.exists()


@pytest.mark.parametrize("operation", ["answer", "cancel"])
def test_signal_names_are_the_kernel_operations(operation: str) -> None:
    from avo.engines import OPERATIONS
    from avo_temporal.workflow import AvoRunWorkflow

    assert operation in OPERATIONS
    assert callable(getattr(AvoRunWorkflow, operation))
