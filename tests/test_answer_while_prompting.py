"""A run waiting at a prompt can be answered from elsewhere; the first recorded answer wins.

The waiting runtime holds the run's lease on a real SQLite store (as ``avo run``
does) and asks its answerer; meanwhile a second store connection (another
shell) records an answer with ``avo.ops``. Exactly one ``human_input_received``
is recorded, and the side that came second is told so. (The same on real
processes and a pseudo-terminal: tests/cli/test_human_loop.py.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime
from avo.approval import Answer, Approval, HumanRequest
from avo.events import EventType
from avo.exceptions import ApprovalError
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.ops.approval import approve, deny, pending_requests
from avo.ops.leases import holding_lease, waiting_here
from avo.state import RunState
from avo.testing.scripts import scripted
from avo.tools import FunctionTool

avo_sqlite = pytest.importorskip("avo_sqlite")


class PushArgs(BaseModel):
    branch: str


def _runtime(store: Any, pushed: list[str], answerer: Any) -> AgentRuntime:
    push = FunctionTool(
        name="git_push",
        description="Push a branch.",
        arguments_model=PushArgs,
        function=lambda a: pushed.append(a.branch) or {"pushed": a.branch},
        risk=ToolRisk.EXECUTE,
    )
    call = ToolCall(tool_call_id="call-1", name="git_push", arguments={"branch": "main"})
    return AgentRuntime(
        provider=scripted(ModelResponse(tool_call=call), ModelResponse(content="finished")),
        tools=[push],
        approval_callback=lambda c: Approval.ask("pushing needs a human"),
        event_store=store,
        answerer=answerer,
    )


class Prompt:
    """A terminal-like answerer: waits, then answers ``given`` (None: never answers)."""

    def __init__(self, before: Any = None, given: Answer | None = None) -> None:
        self.before, self.given = before, given
        self.notices: list[str] = []
        self.cancelled = False

    async def __call__(self, request: HumanRequest) -> Answer | None:
        try:
            if self.before is not None:
                await self.before(request)
            if self.given is None:
                await asyncio.Event().wait()  # nobody types anything
            return self.given
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    def notice(self, text: str) -> None:
        self.notices.append(text)


async def _drive(store: Any, runtime: AgentRuntime) -> Any:
    async with holding_lease(store, "r1", owner="avo-run:test:1") as writer:
        runtime.event_store = writer
        return await runtime.run("push it", run_id="r1")


async def _answers(store: Any) -> list[dict[str, Any]]:
    events = await store.get_events("r1")
    return [e.payload for e in events if e.event_type is EventType.HUMAN_INPUT_RECEIVED]


async def test_an_answer_from_another_shell_continues_the_waiting_run(tmp_path: Path) -> None:
    store = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")
    shell = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")  # another process's connection
    pushed: list[str] = []
    prompt = Prompt()  # never answers: the person answers from another shell

    async def other_shell() -> str:
        while not (requests := await pending_requests(shell, "r1")):
            await asyncio.sleep(0.05)
        assert (await waiting_here(shell, "r1")) is not None  # a prompt waits on it
        call_id = requests[0].tool_call_id
        await approve(shell, "r1", call_id, by="ana", via="cli")  # the lease is free
        return call_id

    result, call_id = await asyncio.gather(
        _drive(store, _runtime(store, pushed, prompt)), other_shell()
    )
    assert result.status is RunState.COMPLETED and pushed == ["main"]
    assert prompt.cancelled and prompt.notices == [f"call {call_id} was approved by ana via cli"]
    [answer] = await _answers(store)
    assert (answer["decision"], answer["by"]) == ("approve", "ana")
    assert await waiting_here(shell, "r1") is None  # the marker is gone
    with pytest.raises(ApprovalError, match="was already approved by ana via cli"):
        await approve(shell, "r1", call_id)  # a late second answer is told who won
    await store.close()
    await shell.close()


async def test_a_prompt_answer_that_comes_second_is_not_recorded(tmp_path: Path) -> None:
    store = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")
    shell = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")
    pushed: list[str] = []

    async def denied_elsewhere_meanwhile(request: HumanRequest) -> None:
        await deny(shell, "r1", request.tool_call_id, reason="not on Fridays", by="ana")

    prompt = Prompt(before=denied_elsewhere_meanwhile, given=Answer.approve(by="terminal"))
    result = await _drive(store, _runtime(store, pushed, prompt))
    assert result.status is RunState.COMPLETED
    assert pushed == []  # the first answer (a denial) stands
    [answer] = await _answers(store)  # exactly one answer recorded
    assert (answer["decision"], answer["by"]) == ("deny", "ana")
    call_id = answer["tool_call_id"]
    assert prompt.notices == [
        f"not recorded: call {call_id} was already denied by ana via api: not on Fridays"
    ]
    await store.close()
    await shell.close()


class CountingStore(avo_sqlite.SQLiteEventStore):  # type: ignore[misc,name-defined]
    """The real SQLite store, noting which reads of the log it serves."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.whole: list[str] = []
        self.tails: list[int] = []

    async def get_events(self, run_id: str) -> Any:
        self.whole.append(run_id)
        return await super().get_events(run_id)

    async def get_events_after(self, run_id: str, after: int) -> Any:
        self.tails.append(after)
        return await super().get_events_after(run_id, after)


async def test_the_waiting_prompt_reads_only_the_logs_tail(tmp_path: Path) -> None:
    """While the prompt waits it reads the events after the last one it saw, never the log."""
    store = CountingStore(tmp_path / "runs.db")
    shell = avo_sqlite.SQLiteEventStore(tmp_path / "runs.db")
    pushed: list[str] = []
    whole_while_waiting: list[int] = []

    async def other_shell() -> None:
        while not (requests := await pending_requests(shell, "r1")):
            await asyncio.sleep(0.05)
        asked = [e for e in await shell.get_events("r1")][-1].sequence
        whole_before = len(store.whole)
        deadline = asyncio.get_running_loop().time() + 30
        while len([t for t in store.tails if t >= asked]) < 3:  # a few polls go by
            if asyncio.get_running_loop().time() > deadline:
                break  # (the assertions below say what was read instead)
            await asyncio.sleep(0.05)
        whole_while_waiting.append(len(store.whole) - whole_before)
        await approve(shell, "r1", requests[0].tool_call_id, by="ana", via="cli")

    prompt = Prompt()
    result, _ = await asyncio.gather(_drive(store, _runtime(store, pushed, prompt)), other_shell())
    assert result.status is RunState.COMPLETED and pushed == ["main"]
    assert prompt.notices and "approved by ana via cli" in prompt.notices[0]
    assert whole_while_waiting == [0]  # no whole-log read while the prompt waited
    assert store.tails and min(store.tails) > 0  # each poll starts after what it had seen
    await store.close()
    await shell.close()
