"""Crash-test zygote: imports everything once, then forks one child per trial.

Protocol on stdin/stdout (one line each):

- ``run {"db": ..., "effects": ..., "steps": N, "pause": null | ["in_tool"|"after_result", K],
  "parallel": false}`` forks a child that drives a FakeProvider tool loop on
  SQLiteEventStore(db) and prints ``pid P``. With ``parallel`` every model turn
  asks for three calls at once (see :func:`parallel_script`). The child prints
  ``ready`` just before the run starts, ``paused`` when it reached the
  requested pause point (and then hangs), and ``done`` when the run finished.
- ``kill`` SIGKILLs the child unless it already exited and prints
  ``exited killed`` or ``exited N``. The zygote is the child's parent, so the
  pid cannot be reused before it is reaped.

The tools ``effect`` (modifies: a barrier) and ``look`` (inspects: runs
alongside others) append their ``key`` argument as a line to the effects file:
that line is the side effect that must never happen twice. The pause points
are keys: ``["in_tool", K]`` hangs inside the call with key ``eK`` (or key
``K`` itself when it is a string), ``["after_result", K]`` once that call's
result is durable.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from typing import Any

from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, LoopPolicy, ModelResponse, ToolCall
from avo.events import AgentEvent, EventType
from avo.models import ToolRisk
from avo_sqlite import SQLiteEventStore


class EffectArgs(BaseModel):
    """Arguments of the effect tool."""

    key: str


def script(steps: int) -> list[ModelResponse]:
    """The model's script: ``steps`` tool calls with fixed ids, then an answer."""
    calls = [
        ModelResponse(
            tool_call=ToolCall(tool_call_id=f"call-{i}", name="effect", arguments={"key": f"e{i}"})
        )
        for i in range(steps)
    ]
    return [*calls, ModelResponse(content="all done")]


def parallel_script(steps: int) -> list[ModelResponse]:
    """``steps`` turns of three calls each, then an answer.

    Turn ``i`` asks for ``look`` (key ``l{i}``), ``effect`` (key ``e{i}``, a
    barrier) and ``look`` (key ``m{i}``): the first look runs, then the effect
    alone, then the second look. Odd turns put the looks side by side instead
    (``look l{i}``, ``look m{i}`` concurrently, then ``effect e{i}``).
    """
    turns = []
    for i in range(steps):
        first, effect, second = (
            ToolCall(tool_call_id=f"call-l{i}", name="look", arguments={"key": f"l{i}"}),
            ToolCall(tool_call_id=f"call-{i}", name="effect", arguments={"key": f"e{i}"}),
            ToolCall(tool_call_id=f"call-m{i}", name="look", arguments={"key": f"m{i}"}),
        )
        calls = [first, effect, second] if i % 2 == 0 else [first, second, effect]
        turns.append(ModelResponse(tool_calls=calls))
    return [*turns, ModelResponse(content="all done")]


def parallel_keys(steps: int) -> list[str]:
    """Every effect key a finished parallel run wrote."""
    return [key for i in range(steps) for key in (f"l{i}", f"e{i}", f"m{i}")]


def _writer(effects: str, pause_key: str | None, delay: float) -> Any:
    def write(args: EffectArgs) -> dict[str, str]:
        with open(effects, "a", encoding="utf-8") as handle:
            handle.write(args.key + "\n")
        if args.key == pause_key:
            _say("paused")
            time.sleep(3600)
        time.sleep(delay)
        return {"wrote": args.key}

    return write


def effect_tool(effects: str, pause_key: str | None = None) -> FunctionTool[EffectArgs]:
    """The tool whose side effect is one appended line (it modifies: a barrier)."""
    return FunctionTool(
        name="effect",
        description="append a line",
        arguments_model=EffectArgs,
        function=_writer(effects, pause_key, 0.002),
        risk=ToolRisk.MODIFY,
    )


def look_tool(effects: str, pause_key: str | None = None) -> FunctionTool[EffectArgs]:
    """An inspect-only tool (it runs alongside others) that also leaves its line."""
    return FunctionTool(
        name="look",
        description="look, and leave a trace",
        arguments_model=EffectArgs,
        function=_writer(effects, pause_key, 0.004),
        risk=ToolRisk.INSPECT,
    )


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


class _PauseAfterResult:
    """Delegates to the store; hangs once the result of the call with ``key`` is durable."""

    def __init__(self, store: SQLiteEventStore, key: str) -> None:
        self._store = store
        self._key = key
        self._call_id: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def _check(self, event: AgentEvent) -> None:
        payload = event.payload
        if event.event_type is EventType.TOOL_STARTED:
            arguments = payload.get("arguments")
            if isinstance(arguments, dict) and arguments.get("key") == self._key:
                self._call_id = payload.get("tool_call_id")
        elif (
            event.event_type is EventType.TOOL_COMPLETED
            and payload.get("tool_call_id") == self._call_id
        ):
            _say("paused")
            await asyncio.sleep(3600)

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        stored = await self._store.append_event(event)
        await self._check(stored)
        return stored

    async def append_event_and_update_run(self, event: AgentEvent, run: Any) -> Any:
        result = await self._store.append_event_and_update_run(event, run)
        await self._check(result[0])
        return result

    async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
        stored = await self._store.append_batch(run, events, checkpoint)
        for event in stored:
            await self._check(event)
        return stored


def runtime_for(
    spec: dict[str, Any], event_store: Any, pause_key: str | None = None
) -> AgentRuntime:
    """The trial's runtime: the same script, tools and policy for the run and its resume."""
    steps = spec["steps"]
    parallel = bool(spec.get("parallel"))
    tools = [effect_tool(spec["effects"], pause_key)]
    if parallel:
        tools.append(look_tool(spec["effects"], pause_key))
    return AgentRuntime(
        provider=FakeProvider(parallel_script(steps) if parallel else script(steps)),
        tools=tools,
        event_store=event_store,
        policy=LoopPolicy(max_steps=steps + 2),
    )


async def _trial(spec: dict[str, Any]) -> None:
    pause = spec.get("pause")
    key = pause[1] if pause and isinstance(pause[1], str) else f"e{pause[1]}" if pause else None
    pause_key = key if pause and pause[0] == "in_tool" else None
    async with SQLiteEventStore(spec["db"]) as store:
        event_store: Any = store
        if pause and pause[0] == "after_result":
            event_store = _PauseAfterResult(store, str(key))
        runtime = runtime_for(spec, event_store, pause_key)
        _say("ready")
        await runtime.run("crash me", run_id=spec.get("run_id"))
    _say("done")


def main() -> None:
    child: int | None = None
    for line in sys.stdin:
        command, _, rest = line.strip().partition(" ")
        if command == "run":
            sys.stdout.flush()
            child = os.fork()
            if child == 0:
                try:
                    asyncio.run(_trial(json.loads(rest)))
                    code = 0
                except BaseException as exc:  # report, never fall back into the zygote loop
                    _say(f"error {type(exc).__name__}: {exc}")
                    code = 1
                os._exit(code)
            print(f"pid {child}", flush=True)
        elif command == "kill" and child is not None:
            pid, status = os.waitpid(child, os.WNOHANG)
            if pid == 0:
                os.kill(child, signal.SIGKILL)
                pid, status = os.waitpid(child, 0)
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            print("exited killed" if killed else f"exited {os.WEXITSTATUS(status)}", flush=True)
            child = None
        elif command == "quit":
            return


if __name__ == "__main__":
    main()
