"""A tool loop that SIGKILLs itself around its K-th store write (run by test_postgres_crash.py).

    python postgres_crasher.py DSN SCHEMA RUN_ID EFFECTS_FILE KILL_AT WHEN

WHEN is ``before`` (the write is never sent) or ``after`` (it committed but
nobody saw the answer). The tool appends its call id to EFFECTS_FILE, the
side effect that must never happen twice.

A RUN_ID starting with ``par`` asks for parallel turns instead (see
:func:`parallel_script`): kills then land inside batches of concurrent calls.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from pydantic import BaseModel

from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.tools import FunctionTool
from avo_postgres import PostgresEventStore

STEPS = 5
WRITES = (
    "create_run",
    "append_event",
    "append_event_and_update_run",
    "save_checkpoint",
    "finalize_run",
    "update_run",
    "append_batch",
)


def parallel_script(run_id: str) -> list[ModelResponse]:
    """STEPS turns of three calls: ``look``, ``effect`` (a barrier), ``look``, then an answer.

    The looks only inspect, so they may run beside each other; the effect runs
    alone between them. Every call records its number, so a repeated call shows.
    """
    turns = []
    for turn in range(STEPS):
        names = ("look", "effect", "look")
        calls = [
            ToolCall(
                tool_call_id=f"{run_id}-v{i}",  # the vendor repeats its ids every turn
                name=name,
                arguments={"n": turn * 3 + i},
            )
            for i, name in enumerate(names)
        ]
        turns.append(ModelResponse(tool_calls=calls))
    return [*turns, ModelResponse(content="finished")]


def calls_of(run_id: str) -> int:
    """How many tool calls a finished run of ``run_id`` made."""
    return STEPS * 3 if run_id.startswith("par") else STEPS


def tools(path: str, run_id: str) -> list[FunctionTool[EffectArgs]]:
    """The run's tools: ``effect`` (modifies), and ``look`` (inspects) for parallel runs."""
    return [effect_tool(path, run_id), effect_tool(path, run_id, name="look")]


def script(run_id: str) -> list[ModelResponse]:
    """The model's answers: STEPS tool calls, then a final answer."""
    if run_id.startswith("par"):
        return parallel_script(run_id)
    calls = [
        ModelResponse(
            tool_call=ToolCall(tool_call_id=f"{run_id}-call-{n}", name="effect", arguments={"n": n})
        )
        for n in range(STEPS)
    ]
    return [*calls, ModelResponse(content="finished")]


class EffectArgs(BaseModel):
    """Arguments of the side-effect tool."""

    n: int


def effect_tool(path: str, run_id: str, name: str = "effect") -> FunctionTool[EffectArgs]:
    """A tool whose every call appends one line (its call number) to ``path``.

    ``effect`` modifies (a barrier in a parallel turn); ``look`` declares it
    only inspects, so its calls run concurrently (the line is how the test sees
    that a call ran, and how often).
    """

    def effect(args: EffectArgs) -> dict[str, int]:
        with open(path, "a") as fh:
            fh.write(f"{run_id}-call-{args.n}\n")
            fh.flush()
            os.fsync(fh.fileno())
        return {"done": args.n}

    return FunctionTool(
        name=name,
        description="A side effect.",
        arguments_model=EffectArgs,
        function=effect,
        risk=ToolRisk.INSPECT if name == "look" else ToolRisk.MODIFY,
    )


class KillAround:
    """Counts the store writes (``writes``); SIGKILLs the process around write ``kill_at``.

    ``kill_at=0`` never kills: a clean run then tells how many writes it makes.
    """

    def __init__(self, inner: Any, kill_at: int, after: bool) -> None:
        self._inner = inner
        self._kill_at = kill_at
        self._after = after
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in WRITES:
            return attr

        async def write(*args: Any) -> Any:
            self.writes += 1
            if self.writes == self._kill_at and not self._after:
                os.kill(os.getpid(), signal.SIGKILL)
            result = await attr(*args)
            if self.writes == self._kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return write


async def main(argv: list[str]) -> None:
    dsn, schema, run_id, effects, kill_at, when = argv
    store = PostgresEventStore(dsn, schema=schema)
    runtime = AgentRuntime(
        provider=FakeProvider(script(run_id)),
        tools=tools(effects, run_id),
        event_store=KillAround(store, int(kill_at), when == "after"),  # type: ignore[arg-type]
    )
    await runtime.run("crash test", run_id=run_id)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
