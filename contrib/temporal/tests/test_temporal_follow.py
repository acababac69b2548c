"""``avo run --engine temporal`` following a run whose workflow ends before the run does.

The command follows the run in the event store. When the run's workflow ends
first (an operator terminates it; its first task fails), nothing will write
the run any more: the command used to wait for ever. It now asks the engine
now and then whether the workflow still runs, and exits 2 with what happened
and what to do: a run never started says so; a run cut off midway names
``avo runs resume`` and ``avo runs cancel``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from temporal_fleet import Fleet

AVO = [sys.executable, "-c", "import sys; from avo.cli import main; sys.exit(main())"]


def _follow(fleet: Fleet, task: str) -> tuple[subprocess.Popen[str], str]:
    """``avo run --engine temporal TASK`` in the background, and its run id once submitted."""
    process = subprocess.Popen(
        [*AVO, "run", "--engine", "temporal", "--no-session", task],
        cwd=fleet.root,
        env=fleet.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:  # "avo: run ID submitted to the temporal engine (store ...)"
        if " submitted to the temporal engine" in line:
            return process, line.split("avo: run ", 1)[1].split()[0]
    process.kill()
    raise AssertionError(f"avo run exited {process.wait()} before submitting")


def _terminate(fleet: Fleet, run_id: str) -> None:
    from temporalio.client import Client

    async def terminate() -> None:
        client = await Client.connect(fleet.address)
        await client.get_workflow_handle(run_id).terminate(reason="test: operator ended it")

    asyncio.run(terminate())


def _ends(process: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, rest = process.communicate(timeout=60)  # before the change: never
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, " ".join(rest.split())


def test_a_workflow_ended_before_the_run_started_is_reported(fleet: Fleet) -> None:
    process, run_id = _follow(fleet, "omega")  # no worker: the workflow waits on its queue
    _terminate(fleet, run_id)
    code, errors = _ends(process)
    assert code == 2, errors
    assert f"run {run_id} never started" in errors, errors
    assert "its workflow terminated" in errors and "nothing was recorded" in errors, errors


def test_a_workflow_ended_midway_names_resume_and_cancel(fleet: Fleet) -> None:
    fleet.write_config(calls=1, delay=30.0)  # the append stops halfway for 30 s
    fleet.start_worker()
    process, run_id = _follow(fleet, "omega")
    deadline = time.monotonic() + 90
    while not (fleet.effects.exists() and fleet.effects.read_text() == "omega 0"):
        assert time.monotonic() < deadline and process.poll() is None, fleet.logs()
        time.sleep(0.05)
    _terminate(fleet, run_id)
    code, errors = _ends(process)
    assert code == 2, errors
    assert f"run {run_id} is tool_executing, but its engine stopped driving it" in errors, errors
    assert "its workflow terminated" in errors, errors
    assert f"avo runs resume {run_id}" in errors and f"avo runs cancel {run_id}" in errors
