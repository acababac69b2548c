"""Crash safety on SQLite: a real process running a tool loop is SIGKILLed, then resumed.

A zygote process (``_crash_zygote.py``) imports avo once and forks one child
per trial, so 50+ trials stay fast. After every kill the database must open,
every run's log must satisfy the event invariants event by event, every side
effect must have a durable TOOL_STARTED, and ``AgentRuntime.resume`` must
either finish the run with each effect exactly once or refuse with
``UnsafeResumeError`` naming the open calls — never a silent duplicate. A
second suite kills runs whose model turns ask for three calls at once (two
inspect-only calls and a barrier), so kills land inside parallel batches: a
resumed run must also never lose a result (every call ends with exactly one
durable result and one transcript message, in the model's order).
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

from avo.events import EventType, RunLogState, validate_event_append
from avo.exceptions import (
    CheckpointNotFoundError,
    RunAlreadyTerminalError,
    UnsafeResumeError,
)
from avo.state import RunState
from avo.testing import minted_ids
from avo_sqlite import SQLiteEventStore

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _crash_zygote import parallel_keys, runtime_for  # noqa: E402

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


def _check_transcript(messages: list[dict[str, Any]]) -> None:
    """Each tool-call turn is followed by exactly one result per call, in the model's order."""
    for index, message in enumerate(messages):
        calls = message.get("tool_calls")
        if message.get("role") != "assistant" or not calls:
            continue
        answers = messages[index + 1 : index + 1 + len(calls)]
        assert [m.get("role") for m in answers] == ["tool"] * len(calls), answers
        assert [m["tool_call_id"] for m in answers] == [c["id"] for c in calls]


async def _check_after_crash(db: Path, effects: Path, spec: dict[str, Any]) -> str:
    """Verify the crashed store, resume its run, verify again; returns the outcome."""
    steps = spec["steps"]
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
        runtime = runtime_for({**spec, "effects": str(effects)}, store)
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
        expected = parallel_keys(steps) if spec.get("parallel") else [f"e{i}" for i in range(steps)]
        after = _effects(effects)
        assert Counter(after) == Counter(expected), after
        final = await store.get_events(run.run_id)
        replay = RunLogState(run_id=run.run_id)
        for event in final:
            validate_event_append(replay, event)
            replay.apply(event)
        assert replay.terminal
        # Never a lost result: every call has exactly one durable result ...
        results = Counter(
            e.payload["tool_call_id"]
            for e in final
            if e.event_type in (EventType.TOOL_COMPLETED, EventType.TOOL_FAILED)
        )
        assert sorted(results.values()) == [1] * len(expected), results
        assert set(results) == replay.started_tool_calls
        # ... and one message in the final transcript, in the model's order.
        checkpoint = await store.get_latest_checkpoint(run.run_id)
        assert checkpoint is not None
        _check_transcript(checkpoint.messages)
        answered = [m["tool_call_id"] for m in checkpoint.messages if m.get("role") == "tool"]
        assert sorted(answered) == sorted(results)
        return outcome


def _calibrate(zygote: Zygote, tmp_path: Path, spec: dict[str, Any]) -> float:
    """How long a whole run takes here, so kills land across the loop."""
    calibration = tmp_path / "calibrate.db"
    zygote.start(db=str(calibration), effects=str(tmp_path / "calibrate.txt"), **spec)
    zygote.read_until("ready")
    began = time.perf_counter()
    zygote.read_until("done")
    duration = time.perf_counter() - began
    zygote.kill()  # it may still be exiting
    return duration


def _trials(zygote: Zygote, tmp_path: Path, spec: dict[str, Any], seed: int) -> Counter[str]:
    duration = _calibrate(zygote, tmp_path, spec)
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    for trial in range(TRIALS):
        db, effects = tmp_path / f"t{trial}.db", tmp_path / f"t{trial}.txt"
        zygote.start(db=str(db), effects=str(effects), **spec)
        zygote.read_until("ready")
        time.sleep(rng.uniform(0, duration * 1.1))
        killed = zygote.kill()
        outcome = asyncio.run(_check_after_crash(db, effects, spec))
        outcomes[outcome if killed else "finished"] += 1
    print("crash outcomes:", dict(outcomes), f"run ~{duration * 1000:.0f} ms")
    mid_run = outcomes["resumed"] + outcomes["refused"] + outcomes["no checkpoint yet"]
    assert mid_run >= 5, f"too few kills landed inside the loop: {dict(outcomes)}"
    return outcomes


SERIAL = {"steps": STEPS}
PARALLEL = {"steps": STEPS, "parallel": True}


@pytest.mark.slow
def test_sigkill_at_random_points_never_repeats_an_effect(zygote: Zygote, tmp_path: Path) -> None:
    _trials(zygote, tmp_path, SERIAL, seed=20261202)


@pytest.mark.slow
def test_sigkill_inside_parallel_batches_never_repeats_or_loses_a_result(
    zygote: Zygote, tmp_path: Path
) -> None:
    _trials(zygote, tmp_path, PARALLEL, seed=20261203)


async def _refused(db: Path, effects: Path, spec: dict[str, Any]) -> UnsafeResumeError:
    async with SQLiteEventStore(db) as store:
        (run,) = await store.list_runs()
        runtime = runtime_for({**spec, "effects": str(effects)}, store)
        with pytest.raises(UnsafeResumeError) as info:
            await runtime.resume(run.run_id)
        assert "started without a durable result" in str(info.value)
        info.value.ids = minted_ids(await store.get_events(run.run_id))  # type: ignore[attr-defined]
        return info.value


def test_kill_inside_a_tool_refuses_resume_naming_the_call(zygote: Zygote, tmp_path: Path) -> None:
    """(a) killed after the tool started, before its result was durable."""
    db, effects = tmp_path / "a.db", tmp_path / "a.txt"
    zygote.start(db=str(db), effects=str(effects), steps=STEPS, pause=["in_tool", 2])
    zygote.read_until("paused")
    assert zygote.kill()
    assert _effects(effects) == ["e0", "e1", "e2"]
    error = asyncio.run(_refused(db, effects, SERIAL))
    [open_call] = error.ids["call-2"]  # type: ignore[attr-defined]
    assert error.tool_call_ids == (open_call,)
    assert open_call in str(error)
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
    outcome = asyncio.run(_check_after_crash(db, effects, SERIAL))
    assert outcome == "resumed"
    assert _effects(effects) == [f"e{i}" for i in range(STEPS)]


def test_kill_inside_a_barrier_refuses_only_that_call(zygote: Zygote, tmp_path: Path) -> None:
    """Turn 2 is look l2, effect e2 (barrier), look m2: killed inside e2."""
    db, effects = tmp_path / "c.db", tmp_path / "c.txt"
    zygote.start(
        db=str(db), effects=str(effects), steps=STEPS, parallel=True, pause=["in_tool", "e2"]
    )
    zygote.read_until("paused")
    assert zygote.kill()
    written = _effects(effects)
    assert written[-2:] == ["l2", "e2"] and "m2" not in written  # the barrier ran alone
    error = asyncio.run(_refused(db, effects, PARALLEL))
    assert error.tool_call_ids == tuple(error.ids["call-2"])  # type: ignore[attr-defined]
    assert _effects(effects) == written


def test_kill_inside_a_concurrent_call_refuses_only_the_unfinished_one(
    zygote: Zygote, tmp_path: Path
) -> None:
    """Turn 1 runs looks l1 and m1 side by side: killed inside l1, after m1's result is durable."""
    db, effects = tmp_path / "d.db", tmp_path / "d.txt"
    zygote.start(
        db=str(db), effects=str(effects), steps=STEPS, parallel=True, pause=["in_tool", "l1"]
    )
    zygote.read_until("paused")
    time.sleep(0.5)  # m1 (4 ms) finishes and its result is flushed while l1 hangs
    assert zygote.kill()
    assert sorted(_effects(effects)[-2:]) == ["l1", "m1"]

    async def check() -> None:
        async with SQLiteEventStore(db) as store:
            (run,) = await store.list_runs()
            events = await store.get_events(run.run_id)
            log = RunLogState.from_events(run.run_id, events)
            ids = minted_ids(events)
            assert ids["call-m1"][0] in log.finished_tool_calls
            assert log.open_tool_calls == {ids["call-l1"][0]}

    asyncio.run(check())
    error = asyncio.run(_refused(db, effects, PARALLEL))
    assert error.tool_call_ids == tuple(error.ids["call-l1"])  # type: ignore[attr-defined]


def test_kill_mid_batch_resumes_only_the_calls_without_a_result(
    zygote: Zygote, tmp_path: Path
) -> None:
    """Killed once e2 (the barrier of turn 2) has a durable result: only m2 runs on resume."""
    db, effects = tmp_path / "e.db", tmp_path / "e.txt"
    zygote.start(
        db=str(db), effects=str(effects), steps=STEPS, parallel=True, pause=["after_result", "e2"]
    )
    zygote.read_until("paused")
    assert zygote.kill()
    before = _effects(effects)
    assert before[-2:] == ["l2", "e2"]
    outcome = asyncio.run(_check_after_crash(db, effects, PARALLEL))
    assert outcome == "resumed"
    assert _effects(effects)[len(before)] == "m2"  # the first effect after the resume
