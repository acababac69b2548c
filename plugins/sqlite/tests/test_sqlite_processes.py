"""Two processes writing one SQLite file: no lost, duplicate or gapped event; invariants hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from avo.events import EventType, RunLogState
from avo.testing.stores import start_run
from avo_sqlite import SQLiteEventStore

WORKER = Path(__file__).with_name("_two_writers.py")
COUNT = 150


@pytest.mark.slow
async def test_two_processes_share_a_run_without_losing_events(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with SQLiteEventStore(path) as store:
        shared = await start_run(store)
    children = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(path), shared, name, str(COUNT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    for child in children:  # release both at once: they race to finalize
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        outputs.append(out.split())
    outcomes = sorted(outcome for _, outcome in outputs)
    assert outcomes == ["lost:EventInvariantError", "won"]
    async with SQLiteEventStore(path) as store:
        events = await store.get_events(shared)
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
        requested = [e.payload for e in events if e.event_type is EventType.MODEL_REQUESTED]
        for name in ("a", "b"):
            assert sorted(p["n"] for p in requested if p["worker"] == name) == list(range(COUNT))
        state = RunLogState.from_events(shared, events)
        assert state.terminal
        assert [e.event_type for e in events].count(EventType.RUN_COMPLETED) == 1
        for own, _ in outputs:
            own_events = await store.get_events(own)
            assert [e.sequence for e in own_events] == list(range(1, COUNT + 5))
        assert len(await store.list_runs()) == 3
