"""Stopping ``avo worker``: real worker processes, real signals, a real dev server.

SIGTERM lets a call in flight finish within ``--stop-seconds`` and exits 0; a
call that takes longer is handed back (another worker's retry finds the
effect ledger's ``started`` and asks a person, as after a crash) and the
process is gone within the bound anyway. A worker started with
``--exit-with-parent`` stops when the process that started it is killed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from temporal_fleet import Fleet, submit

from avo.compose import open_store
from avo.events import EventType, RunLogState


async def _events(fleet: Fleet, run_id: str) -> list:
    store = open_store(fleet.store)
    try:
        return await store.get_events(run_id)
    finally:
        await store.close()


async def _wait_for(fleet: Fleet, run_id: str, state: str, timeout: float = 120) -> None:
    store = open_store(fleet.store)
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            head = await store.get_run(run_id)
            if head is not None and head.state.value == state:
                events = await store.get_events(run_id)
                if state != "paused" or events[-1].payload.get("to_state") == "paused":
                    return
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"run {run_id} is {head and head.state.value}, not {state}")
            await asyncio.sleep(0.2)
    finally:
        await store.close()


def _half_written(fleet: Fleet, line: str, timeout: float = 90) -> None:
    """Wait until the tool has written ``line`` without its newline (the call is in flight)."""
    deadline = time.monotonic() + timeout
    while not (fleet.effects.exists() and fleet.effects.read_text() == line):
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.05)


def test_sigterm_lets_the_call_in_flight_finish_then_exits_0(fleet: Fleet) -> None:
    fleet.write_config(calls=1, delay=3.0)  # the append pauses 3 s halfway
    first = fleet.start_worker("--stop-seconds", "120")
    run_id = asyncio.run(submit(fleet, "sigma"))
    _half_written(fleet, "sigma 0")
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=150) == 0, fleet.logs()
    assert fleet.effects.read_text() == "sigma 0\n"  # it finished before the worker left
    logs = fleet.logs()
    assert "avo: SIGTERM: stopping" in logs and "avo: temporal worker stopped" in logs, logs
    fleet.start_worker()
    asyncio.run(_wait_for(fleet, run_id, "completed"))
    events = asyncio.run(_events(fleet, run_id))
    RunLogState.from_events(run_id, events)
    assert not [e for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert fleet.effects.read_text() == "sigma 0\n"  # once


def test_a_call_longer_than_the_bound_is_handed_back_and_the_worker_still_exits_0(
    fleet: Fleet,
) -> None:
    fleet.write_config(calls=1, delay=600.0)  # the append would take ten minutes
    first = fleet.start_worker("--stop-seconds", "1")
    run_id = asyncio.run(submit(fleet, "tau"))
    _half_written(fleet, "tau 0")
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=90) == 0, fleet.logs()  # bound: 1 s + the 5 s margin
    fleet.write_config(calls=1, delay=0.0)
    fleet.start_worker()
    # the call's outcome is unknown (it began and never reported): a person decides
    asyncio.run(_wait_for(fleet, run_id, "paused"))
    events = asyncio.run(_events(fleet, run_id))
    asked = [e for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert asked and asked[-1].payload["rule"] == "outcome_unknown", fleet.logs()
    fleet.avo("runs", "deny", run_id, "--reason", "half a line is there")
    asyncio.run(_wait_for(fleet, run_id, "completed"))
    RunLogState.from_events(run_id, asyncio.run(_events(fleet, run_id)))
    assert fleet.effects.read_text() == "tau 0"  # never run again


PARENT = """
import subprocess, sys, time
log = open("worker-orphan.log", "w")
worker = subprocess.Popen(sys.argv[1:], stdout=log, stderr=subprocess.STDOUT)
print(worker.pid, flush=True)
time.sleep(3600)
"""


def _gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie nobody reaped counts as exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in status


def test_a_worker_started_with_exit_with_parent_stops_when_its_parent_is_killed(
    fleet: Fleet,
) -> None:
    command = [sys.executable, "-c", "import sys; from avo.cli import main; sys.exit(main())"]
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, *command, "worker", "--exit-with-parent"],
        cwd=fleet.root,
        env=fleet.env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    try:
        run_id = asyncio.run(submit(fleet, "upsilon"))
        asyncio.run(_wait_for(fleet, run_id, "completed"))  # the worker serves
        parent.send_signal(signal.SIGKILL)  # the supervisor dies without stopping it
        parent.wait()
        deadline = time.monotonic() + 60
        while not _gone(worker):
            assert time.monotonic() < deadline, "the orphaned worker is still running"
            time.sleep(0.1)
        log = (fleet.root / "worker-orphan.log").read_text()
        assert f"avo: parent process {parent.pid} exited: stopping" in log, log
        assert "avo: temporal worker stopped" in log, log
    finally:
        if not _gone(worker):
            os.kill(worker, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        parent.stdout.close()
