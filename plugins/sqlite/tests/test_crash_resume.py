"""Crash safety on SQLite: a real process running a tool loop is SIGKILLed, then resumed.

A zygote process (``_crash_zygote.py``) imports avo once and forks one child
per trial, so 50+ trials stay fast. After every kill the database must open,
every run's log must satisfy the event invariants event by event, every side
effect must have a durable TOOL_STARTED, and ``AgentRuntime.resume`` must
either finish the run with each effect exactly once or refuse with
``UnsafeResumeError`` naming the open call — never a silent duplicate.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from avo import AgentRuntime, FakeProvider, LoopPolicy
from avo.events import EventType, RunLogState, validate_event_append
from avo.exceptions import (
    CheckpointNotFoundError,
    RunAlreadyTerminalError,
    UnsafeResumeError,
)
from avo.state import RunState
from avo_sqlite import SQLiteEventStore

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _crash_zygote import effect_tool, script  # noqa: E402

STEPS = 6
TRIALS = 50
READ_TIMEOUT = 60.0


class Zygote:
    """Drives the zygote process over its pipes."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "_crash_zygote.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read_until(self, *prefixes: str) -> str:
        assert self.proc.stdout is not None
        # A line that never comes (a trial hanging) must fail the test, not hang it:
        # past the deadline the zygote is killed, so readline sees end of file.
        watchdog = threading.Timer(READ_TIMEOUT, self.proc.kill)
        watchdog.start()
        try:
            while True:
                line = self._line()
                if line.startswith("error"):
                    raise AssertionError(f"trial child failed: {line}")
                if line.startswith(prefixes):
                    return line
        finally:
            watchdog.cancel()

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(
                f"the crash zygote died, or sent nothing expected for {READ_TIMEOUT} s "
                "and was killed"
            )
        return line.strip()

    def start(self, **spec: Any) -> None:
        self.send("run " + json.dumps(spec))
        self.read_until("pid")

    def kill(self) -> bool:
        """SIGKILL the child (unless it finished); True when it was killed."""
        self.send("kill")
        return self.read_until("exited") == "exited killed"

    def close(self) -> None:
        self.send("quit")
        self.proc.communicate(timeout=30)


@pytest.fixture
def zygote() -> Iterator[Zygote]:
    process = Zygote()
    try:
        yield process
    finally:
        process.close()


def _effects(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


async def _check_after_crash(db: Path, effects: Path) -> str:
    """Verify the crashed store, resume its run, verify again; returns the outcome."""
    async with SQLiteEventStore(db) as store:
        runs = await store.list_runs()
        if not runs:
            assert _effects(effects) == []
            return "not started"
        (run,) = runs
        events = await store.get_events(run.run_id)
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
        state = RunLogState(run_id=run.run_id)
        for event in events:  # the stored log satisfies every invariant, in order
            validate_event_append(state, event)
            state.apply(event)
        started = {
            str(e.payload["arguments"]["key"])  # type: ignore[index]
            for e in events
            if e.event_type is EventType.TOOL_STARTED
        }
        before = _effects(effects)
        assert len(before) == len(set(before)), f"an effect ran twice before resume: {before}"
        assert set(before) <= started, "an effect happened without a durable tool_started"
        runtime = AgentRuntime(
            provider=FakeProvider(script(STEPS)),
            tools=[effect_tool(str(effects))],
            event_store=store,
            policy=LoopPolicy(max_steps=STEPS + 2),
        )
        try:
            result = await runtime.resume(run.run_id)
        except RunAlreadyTerminalError:
            outcome = "finished before the kill"
        except CheckpointNotFoundError:
            assert not started and before == []
            return "no checkpoint yet"
        except UnsafeResumeError as exc:
            assert exc.tool_call_ids == tuple(sorted(state.open_tool_calls))
            for call_id in exc.tool_call_ids:
                assert call_id in str(exc)
            assert _effects(effects) == before
            assert not await store.is_terminal_run(run.run_id)
            return "refused"
        else:
            assert result.status is RunState.COMPLETED, result
            outcome = "resumed"
        after = _effects(effects)
        assert Counter(after) == Counter(f"e{i}" for i in range(STEPS)), after
        final = await store.get_events(run.run_id)
        replay = RunLogState(run_id=run.run_id)
        for event in final:
            validate_event_append(replay, event)
            replay.apply(event)
        assert replay.terminal
        return outcome


@pytest.mark.slow
def test_sigkill_at_random_points_never_repeats_an_effect(zygote: Zygote, tmp_path: Path) -> None:
    # Calibrate: how long a whole run takes here, so kills land across the loop.
    calibration = tmp_path / "calibrate.db"
    zygote.start(db=str(calibration), effects=str(tmp_path / "calibrate.txt"), steps=STEPS)
    zygote.read_until("ready")
    began = time.perf_counter()
    zygote.read_until("done")
    duration = time.perf_counter() - began
    zygote.kill()  # it may still be exiting

    rng = random.Random(20261202)
    outcomes: Counter[str] = Counter()
    for trial in range(TRIALS):
        db, effects = tmp_path / f"t{trial}.db", tmp_path / f"t{trial}.txt"
        zygote.start(db=str(db), effects=str(effects), steps=STEPS)
        zygote.read_until("ready")
        time.sleep(rng.uniform(0, duration * 1.1))
        killed = zygote.kill()
        outcome = asyncio.run(_check_after_crash(db, effects))
        outcomes[outcome if killed else "finished"] += 1
    print("crash outcomes:", dict(outcomes), f"run ~{duration * 1000:.0f} ms")
    mid_run = outcomes["resumed"] + outcomes["refused"] + outcomes["no checkpoint yet"]
    assert mid_run >= 5, f"too few kills landed inside the loop: {dict(outcomes)}"


def test_kill_inside_a_tool_refuses_resume_naming_the_call(zygote: Zygote, tmp_path: Path) -> None:
    """(a) killed after the tool started, before its result was durable."""
    db, effects = tmp_path / "a.db", tmp_path / "a.txt"
    zygote.start(db=str(db), effects=str(effects), steps=STEPS, pause=["in_tool", 2])
    zygote.read_until("paused")
    assert zygote.kill()
    assert _effects(effects) == ["e0", "e1", "e2"]

    async def check() -> None:
        async with SQLiteEventStore(db) as store:
            (run,) = await store.list_runs()
            runtime = AgentRuntime(
                provider=FakeProvider(script(STEPS)),
                tools=[effect_tool(str(effects))],
                event_store=store,
            )
            with pytest.raises(UnsafeResumeError, match="call-2") as info:
                await runtime.resume(run.run_id)
            assert info.value.tool_call_ids == ("call-2",)
            assert "started without a durable result" in str(info.value)

    asyncio.run(check())
    assert _effects(effects) == ["e0", "e1", "e2"]


def test_kill_after_a_durable_result_resumes_with_each_effect_once(
    zygote: Zygote, tmp_path: Path
) -> None:
    """(b) killed right after the tool's result became durable."""
    db, effects = tmp_path / "b.db", tmp_path / "b.txt"
    zygote.start(db=str(db), effects=str(effects), steps=STEPS, pause=["after_result", 3])
    zygote.read_until("paused")
    assert zygote.kill()
    assert _effects(effects) == ["e0", "e1", "e2", "e3"]
    outcome = asyncio.run(_check_after_crash(db, effects))
    assert outcome == "resumed"
    assert _effects(effects) == [f"e{i}" for i in range(STEPS)]
