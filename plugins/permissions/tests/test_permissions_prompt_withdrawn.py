"""The InteractivePrompter as a run's answerer, when the pause is answered elsewhere first.

A run on a real SQLite store (holding its lease, as ``avo run`` does) pauses
for an approval and its InteractivePrompter waits on a pipe; another store
connection ("another shell") approves. The prompt is withdrawn and told so,
the run goes on, and the next line written to the pipe answers the next
prompt (the withdrawn one takes nothing).
"""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.ops.approval import approve, pending_requests
from avo.ops.leases import holding_lease
from avo.state import RunState
from avo.testing.scripts import scripted
from avo.tools import FunctionTool
from avo_permissions import InteractivePrompter, PermissionMode, build_approval_callback
from avo_permissions.modes import PermissionPolicy

avo_sqlite = pytest.importorskip("avo_sqlite")


class PushArgs(BaseModel):
    branch: str


def _runtime(store: Any, pushed: list[str], prompter: InteractivePrompter) -> AgentRuntime:
    push = FunctionTool(
        name="git_push",
        description="Push a branch.",
        arguments_model=PushArgs,
        function=lambda a: pushed.append(a.branch) or {"pushed": a.branch},
        risk=ToolRisk.EXECUTE,
    )
    callback = build_approval_callback(
        PermissionPolicy(mode=PermissionMode.DEFAULT), tools=[push], prompter=prompter
    )
    call = ToolCall(tool_call_id="c1", name="git_push", arguments={"branch": "main"})
    return AgentRuntime(
        provider=scripted(ModelResponse(tool_call=call), ModelResponse(content="pushed")),
        tools=[push],
        approval_callback=callback,
        answerer=callback.answerer,
        event_store=store,
    )


async def _drive(store: Any, runtime: AgentRuntime, run_id: str) -> Any:
    async with holding_lease(store, run_id, owner="avo-run:test:1") as writer:
        runtime.event_store = writer
        return await runtime.run("push it", run_id=run_id)


async def test_a_withdrawn_prompt_is_told_and_takes_no_line_from_the_next(tmp_path: Path) -> None:
    store = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")
    shell = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")  # another process's connection
    read_end, write_end = os.pipe()
    stdin = os.fdopen(read_end, "r")
    said = io.StringIO()
    prompter = InteractivePrompter(stdin=stdin, stdout=said)
    pushed: list[str] = []

    async def other_shell() -> None:
        while not (requests := await pending_requests(shell, "r1")):
            await asyncio.sleep(0.05)
        while "? [y/N]: " not in said.getvalue():
            await asyncio.sleep(0.05)
        await approve(shell, "r1", requests[0].tool_call_id, by="ana", via="cli")

    first, _ = await asyncio.wait_for(
        asyncio.gather(_drive(store, _runtime(store, pushed, prompter), "r1"), other_shell()), 60
    )
    assert first.status is RunState.COMPLETED and pushed == ["main"]
    assert "approved by ana via cli" in said.getvalue()  # the prompt was told

    os.write(write_end, b"y\n")  # typed for the next prompt
    second = await asyncio.wait_for(_drive(store, _runtime(store, pushed, prompter), "r2"), 60)
    assert second.status is RunState.COMPLETED and pushed == ["main", "main"]
    assert said.getvalue().count("? [y/N]: ") == 2
    os.close(write_end)
    stdin.close()
    await store.close()
    await shell.close()
