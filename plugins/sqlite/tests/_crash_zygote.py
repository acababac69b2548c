"""Crash-test zygote: imports everything once, then forks one child per trial.

Protocol on stdin/stdout (one line each):

- ``run {"db": ..., "effects": ..., "steps": N, "pause": null | ["in_tool"|"after_result", K]}``
  forks a child that drives a FakeProvider tool loop on SQLiteEventStore(db)
  and prints ``pid P``. The child prints ``ready`` just before the run starts,
  ``paused`` when it reached the requested pause point (and then hangs), and
  ``done`` when the run finished.
- ``kill`` SIGKILLs the child unless it already exited and prints
  ``exited killed`` or ``exited N``. The zygote is the child's parent, so the
  pid cannot be reused before it is reaped.

The tool ``effect`` appends its ``key`` argument as a line to the effects
file: that line is the side effect that must never happen twice.
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


def effect_tool(effects: str, pause_key: str | None = None) -> FunctionTool[EffectArgs]:
    """The tool whose side effect is one appended line."""

    def effect(args: EffectArgs) -> dict[str, str]:
        with open(effects, "a", encoding="utf-8") as handle:
            handle.write(args.key + "\n")
        if args.key == pause_key:
            _say("paused")
            time.sleep(3600)
        time.sleep(0.002)
        return {"wrote": args.key}

    return FunctionTool(
        name="effect", description="append a line", arguments_model=EffectArgs, function=effect
    )


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


class _PauseAfterResult:
    """Delegates to the store; hangs once the chosen call's result is durable."""

    def __init__(self, store: SQLiteEventStore, call_id: str) -> None:
        self._store = store
        self._call_id = call_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def _check(self, event: AgentEvent) -> None:
        if (
            event.event_type is EventType.TOOL_COMPLETED
            and event.payload.get("tool_call_id") == self._call_id
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


async def _trial(spec: dict[str, Any]) -> None:
    pause = spec.get("pause")
    pause_key = f"e{pause[1]}" if pause and pause[0] == "in_tool" else None
    async with SQLiteEventStore(spec["db"]) as store:
        event_store: Any = store
        if pause and pause[0] == "after_result":
            event_store = _PauseAfterResult(store, f"call-{pause[1]}")
        runtime = AgentRuntime(
            provider=FakeProvider(script(spec["steps"])),
            tools=[effect_tool(spec["effects"], pause_key)],
            event_store=event_store,
            policy=LoopPolicy(max_steps=spec["steps"] + 2),
        )
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
