"""Crash trials for a store serving many runs at once: SIGKILL, then check and resume.

A store plugin's test starts a child process that calls :func:`run_many` (N
concurrent runs of a fake-model tool loop on one store instance), kills it
with SIGKILL at a random moment, and calls :func:`check_after_kill` on a
fresh store instance. The check holds the store to what it promised:

- **no acknowledged batch is lost**: the child writes a line to the *acks*
  file each time a durable write (``create_run``, ``append_batch``,
  ``finalize_run``) returned; every acknowledged sequence must be stored;
- **no effect is duplicated, none is hidden**: the tool's effect is a line
  in the *effects* file; before resume each happened at most once, and only
  with a durable ``TOOL_STARTED``; after ``resume`` of every unfinished run,
  each completed run shows each of its effects exactly once, and a run that
  is refused is refused with :class:`~avo.exceptions.UnsafeResumeError`
  naming calls that started without a durable result;
- every stored log is gapless and satisfies the event invariants.

Both functions take the store already opened; files are plain paths.
:func:`kill_after_acks` picks the moment of the kill by the child's progress
(how many durable writes it acknowledged), not by wall time, so a loaded
machine that starts the child slowly still gets killed mid-run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, JsonValue

from avo.events import AgentEvent, EventType, RunLogState, validate_event_append
from avo.exceptions import (
    CheckpointNotFoundError,
    RunAlreadyTerminalError,
    RunNotFoundError,
    UnsafeResumeError,
)
from avo.models import ModelResponse, ToolCall
from avo.policies import LoopPolicy
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.storage.base import EventStore
from avo.tools import FunctionTool


class EffectArgs(BaseModel):
    """Arguments of the effect tool: the line it appends."""

    key: str


def run_id_of(number: int) -> str:
    """The id of the ``number``-th run of a trial."""
    return f"run-{number:03d}"


def script(run_id: str, steps: int) -> list[ModelResponse]:
    """``steps`` tool calls with fixed ids and effect keys, then an answer."""
    calls = [
        ModelResponse(
            tool_call=ToolCall(
                tool_call_id=f"{run_id}-call-{i}",
                name="effect",
                arguments={"key": f"{run_id}-e{i}"},
            )
        )
        for i in range(steps)
    ]
    return [*calls, ModelResponse(content="all done")]


def effect_tool(effects: str | Path) -> FunctionTool[EffectArgs]:
    """The tool whose side effect is one line appended to ``effects`` (one ``write``)."""
    path = str(effects)

    def effect(args: EffectArgs) -> JsonValue:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (args.key + "\n").encode())
        finally:
            os.close(fd)
        return {"wrote": args.key}

    return FunctionTool(
        name="effect",
        description="append a line",
        arguments_model=EffectArgs,
        function=effect,
        run_in_thread=False,
    )


class _Acknowledging:
    """The store, noting in the acks file every durable write as it returns."""

    def __init__(self, store: Any, acks: str | Path) -> None:
        self._store = store
        self._fd = os.open(str(acks), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _ack(self, event: AgentEvent) -> None:
        os.write(self._fd, f"{event.run_id} {event.sequence}\n".encode())

    async def create_run(self, run: Any, event: AgentEvent) -> Any:
        stored = await self._store.create_run(run, event)
        os.write(self._fd, f"{run.run_id} 1\n".encode())
        return stored

    async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
        stored = await self._store.append_batch(run, events, checkpoint)
        self._ack(stored[-1])
        return stored

    async def finalize_run(self, run: Any, state_event: Any, terminal_event: Any) -> Any:
        stored = await self._store.finalize_run(run, state_event, terminal_event)
        self._ack(stored[1])
        return stored


def _runtime(store: Any, run_id: str, steps: int, effects: str | Path) -> AgentRuntime:
    return AgentRuntime(
        provider=FakeProvider(script(run_id, steps)),
        tools=[effect_tool(effects)],
        event_store=store,
        policy=LoopPolicy(max_steps=steps + 2, max_runtime_seconds=None),
    )


async def run_many(
    store: EventStore, *, runs: int, steps: int, effects: str | Path, acks: str | Path
) -> None:
    """Drive ``runs`` runs of ``steps`` tool steps concurrently on ``store`` (the child's part)."""
    import asyncio

    acknowledging: Any = _Acknowledging(store, acks)
    await asyncio.gather(
        *(
            _runtime(acknowledging, run_id_of(k), steps, effects).run(
                "crash test", run_id=run_id_of(k)
            )
            for k in range(runs)
        )
    )


def _lines(path: str | Path) -> list[str]:
    return Path(path).read_text().split("\n")[:-1] if Path(path).exists() else []


def acknowledged(acks: str | Path) -> int:
    """How many durable writes the child has acknowledged so far."""
    return len(_lines(acks))


def kill_after_acks(
    child: subprocess.Popen[Any], acks: str | Path, target: int, *, timeout: float = 120.0
) -> int:
    """SIGKILL ``child`` as soon as ``acks`` holds ``target`` lines (or it exits).

    Returns the number of acknowledged writes seen at the kill; raises
    AssertionError if neither happens within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    seen = acknowledged(acks)
    while seen < target and child.poll() is None:
        assert time.monotonic() < deadline, f"the child acknowledged {seen} of {target} writes"
        time.sleep(0.001)
        seen = acknowledged(acks)
    child.send_signal(signal.SIGKILL)
    return seen


async def check_after_kill(
    store: EventStore, *, runs: int, steps: int, effects: str | Path, acks: str | Path
) -> Counter[str]:
    """Check what a killed child left (see the module docstring) and resume every run.

    Returns how each run ended up (``"resumed"``, ``"refused"``, ``"finished"``,
    ``"no checkpoint yet"``, ``"never created"``); raises AssertionError on a
    lost acknowledged batch, a duplicated or hidden effect, or a bad log.
    """
    acked: dict[str, int] = {}
    for line in _lines(acks):
        run_id, _, sequence = line.partition(" ")
        acked[run_id] = max(acked.get(run_id, 0), int(sequence))
    before = Counter(_lines(effects))
    duplicated = {key: n for key, n in before.items() if n > 1}
    assert not duplicated, f"effects ran twice before any resume: {duplicated}"
    outcomes: Counter[str] = Counter()
    for k in range(runs):
        run_id = run_id_of(k)
        events = await store.get_events(run_id)
        _check_log(run_id, events, acked.get(run_id, 0))
        started = {
            str(e.payload["arguments"]["key"])  # type: ignore[index,call-overload]
            for e in events
            if e.event_type is EventType.TOOL_STARTED
        }
        mine = {key for key in before if key.startswith(f"{run_id}-")}
        hidden = mine - started
        assert not hidden, f"{run_id}: effects without a durable tool_started: {hidden}"
        outcomes[await _resume(store, run_id, steps, effects, events)] += 1
    after = Counter(_lines(effects))
    duplicated = {key: n for key, n in after.items() if n > 1}
    assert not duplicated, f"effects ran twice after resume: {duplicated}"
    return outcomes


def _check_log(run_id: str, events: Sequence[AgentEvent], acked: int) -> None:
    sequences = [e.sequence for e in events]
    assert sequences == list(range(1, len(events) + 1)), f"{run_id}: gaps {sequences}"
    assert len(events) >= acked, (
        f"{run_id}: an acknowledged batch was lost: sequence {acked} was acknowledged, "
        f"the store holds {len(events)} events"
    )
    log = RunLogState(run_id=run_id)
    for event in events:
        validate_event_append(log, event)
        log.apply(event)


async def _resume(
    store: EventStore, run_id: str, steps: int, effects: str | Path, events: Sequence[AgentEvent]
) -> str:
    log = RunLogState.from_events(run_id, list(events)) if events else None
    try:
        result = await _runtime(store, run_id, steps, effects).resume(run_id)
    except RunAlreadyTerminalError:
        outcome = "finished"
    except CheckpointNotFoundError:
        return "no checkpoint yet"
    except RunNotFoundError:
        assert not events, f"{run_id}: stored events but no run"
        return "never created"
    except UnsafeResumeError as exc:
        open_calls = set() if log is None else log.open_tool_calls
        assert open_calls and set(exc.tool_call_ids) == open_calls, (
            f"{run_id}: refused for {exc.tool_call_ids}, open calls {open_calls}"
        )
        return "refused"
    else:
        assert result.status.value == "completed", f"{run_id}: {result}"
        outcome = "resumed"
    done = Counter(line for line in _lines(effects) if line.startswith(f"{run_id}-"))
    assert done == Counter(f"{run_id}-e{i}" for i in range(steps)), f"{run_id}: {done}"
    return outcome


__all__ = [
    "acknowledged",
    "check_after_kill",
    "effect_tool",
    "kill_after_acks",
    "run_id_of",
    "run_many",
    "script",
]
