"""Four workers, 200 runs, a worker SIGKILLed twice at random moments: nothing lost, nothing twice.

Each run is the ``loop`` model's tool loop: three calls of the non-idempotent
``append_line`` tool, each appending one line to a shared file. A killed
worker's workflows and activities move to the others. The test plays the
person for any call whose outcome became unknown (its worker died between the
ledger's ``started`` and ``done``): it looks at the file and denies ("it
already happened") or approves, as a person would. Then every run must be
completed, every line present exactly once, every log gapless and valid, and
a process that never ran a worker must read the runs (``avo runs inspect``,
``avo cost``).
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import sqlite3
import time
from collections import Counter

import pytest
from temporal_fleet import Fleet, submit

from avo.approval import Answer
from avo.compose import open_store
from avo.events import EventType, RunLogState
from avo.exceptions import ApprovalError, StorageError
from avo.ops import answer_requests

ENDED_BADLY = {"failed", "cancelled", "stopped"}
RUNS = 200
CALLS = 3
WORKERS = 4


async def _heads(fleet: Fleet, run_ids: list[str]) -> dict[str, str]:
    store = open_store(fleet.store)
    try:
        heads = {}
        for run_id in run_ids:
            head = await store.get_run(run_id)
            heads[run_id] = head.state.value if head is not None else "submitted"
        return heads
    finally:
        await store.close()


async def _answer_unknown(fleet: Fleet, run_ids: list[str]) -> int:
    """Decide about every call whose outcome is unknown, by looking at the file."""
    lines = Counter(fleet.effects.read_text().splitlines()) if fleet.effects.exists() else Counter()
    store = open_store(fleet.store)
    answered = 0
    try:
        for run_id in run_ids:
            head = await store.get_run(run_id)
            if head is None or head.state.value != "paused":
                continue
            events = await store.get_events(run_id)
            if events[-1].payload.get("to_state") != "paused":
                continue
            asked = {
                e.payload["tool_call_id"]: e
                for e in events
                if e.event_type is EventType.HUMAN_INPUT_REQUESTED
            }
            given = {
                e.payload["tool_call_id"]
                for e in events
                if e.event_type is EventType.HUMAN_INPUT_RECEIVED
            }
            calls = {
                e.payload["tool_call_id"]: e.payload
                for e in events
                if e.event_type is EventType.TOOL_STARTED
            }
            answers = {}
            for call_id, request in asked.items():
                if call_id in given:
                    continue
                assert request.payload["rule"] == "outcome_unknown"
                line = calls[call_id]["arguments"]["line"]
                answers[call_id] = (
                    Answer.deny("it already happened", by="test")
                    if lines[line]
                    else Answer.approve("it did not happen", by="test")
                )
            if answers:
                try:
                    await answer_requests(store, run_id, answers, environ={})
                except ApprovalError:
                    # An answer sent on an earlier look reaches the workflow as a signal and
                    # is recorded a little later: the run moved on since this read (a person
                    # answering twice gets the same error). The next look sees it.
                    continue
                answered += len(answers)
    finally:
        await store.close()
    return answered


@pytest.mark.slow
def test_four_workers_two_kills_every_run_completes_every_effect_once(fleet: Fleet) -> None:
    hooks = f'hooks = [{{name = "ledger", settings = {{database = "{fleet.store}"}}}}]\n'
    fleet.write_config(calls=CALLS, hooks=hooks)
    for _ in range(WORKERS):
        fleet.start_worker("--concurrency", "20")
    run_ids = asyncio.run(_submit_all(fleet))
    rng = random.Random()
    victim = 0
    kills = 0
    answered = 0
    kill_at = sorted(rng.uniform(0.1, 0.7) * RUNS * CALLS for _ in range(2))
    deadline = time.monotonic() + 900  # minutes on an idle machine; far more on a busy one
    while True:
        assert time.monotonic() < deadline, f"runs still going: {fleet.logs()[-3000:]}"
        done_lines = len(fleet.effects.read_text().splitlines()) if fleet.effects.exists() else 0
        if kills < 2 and done_lines >= kill_at[kills]:
            worker = fleet.workers[victim]
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            kills += 1
            fleet.start_worker("--concurrency", "20")  # the same worker, restarted
            victim = len(fleet.workers) - 1
        try:
            heads = asyncio.run(_heads(fleet, run_ids))
            if all(state == "completed" for state in heads.values()):
                break
            ended = {run: state for run, state in heads.items() if state in ENDED_BADLY}
            assert not ended, ended
            if any(state == "paused" for state in heads.values()):
                answered += asyncio.run(_answer_unknown(fleet, run_ids))
        except (StorageError, sqlite3.OperationalError):  # four workers are writing: read later
            pass
        time.sleep(0.5)
    assert kills == 2

    lines = Counter(fleet.effects.read_text().splitlines())
    expected = {f"run-{i:03d} {k}" for i in range(RUNS) for k in range(CALLS)}
    assert set(lines) == expected
    assert all(count == 1 for count in lines.values()), lines.most_common(3)
    asyncio.run(_check_logs(fleet, run_ids))

    # A process that never ran a worker reads the same runs from the store alone.
    for run_id in rng.sample(run_ids, 3):
        inspected = fleet.avo("runs", "inspect", run_id)
        assert "completed" in inspected.stdout
    listed = json.loads(fleet.avo("runs", "list", "--json").stdout)
    assert {row["run_id"] for row in listed} >= set(run_ids)
    cost = json.loads(fleet.avo("cost", "--json").stdout)
    assert cost["run_count"] == RUNS
    total = cost["total"]
    assert total["input_tokens"] == RUNS * (CALLS + 1) * 10  # every model call counted once
    print(f"kills at {kill_at}, unknown outcomes answered: {answered}")


async def _submit_all(fleet: Fleet) -> list[str]:
    return [await submit(fleet, f"run-{i:03d}") for i in range(RUNS)]


async def _check_logs(fleet: Fleet, run_ids: list[str]) -> None:
    store = open_store(fleet.store)
    try:
        for run_id in run_ids:
            events = await store.get_events(run_id)
            assert [e.sequence for e in events] == list(range(1, len(events) + 1))
            log = RunLogState.from_events(run_id, events)
            assert log.state.value == "completed"
            kinds = [e.event_type for e in events]
            results = kinds.count(EventType.TOOL_COMPLETED) + kinds.count(EventType.TOOL_FAILED)
            assert results == CALLS
    finally:
        await store.close()
