"""The compaction policy keeps requests inside the window and never changes the transcript."""

from __future__ import annotations

import re
from typing import Any

import pytest
from context_reader import ChunkArgs, chunk_text, chunk_tool

from avo import AgentRuntime, EventType, LoopPolicy, RunState, StopReason
from avo.context_window import messages_tokens, tools_tokens
from avo.models import ModelRequest
from avo.shaping import replay
from avo.storage.memory import InMemoryEventStore
from avo_context import CompactionBundle, CompactionPolicy, CompactionSettings

WINDOW = 2_000


class Crash(BaseException):
    """Stands in for the process dying."""


def runtime_for(provider: Any, store: Any, **settings: Any) -> AgentRuntime:
    return AgentRuntime(
        provider=provider,
        tools=[chunk_tool()],
        event_store=store,
        policy=LoopPolicy(max_steps=200, no_progress_window=200, repeated_action_limit=200),
        context_window=WINDOW,
        bundles=[CompactionBundle(settings)],
    )


def request_tokens(request: ModelRequest) -> int:
    return messages_tokens(request.messages) + tools_tokens(request.tools)


def of(kind: EventType, events: list[Any]) -> list[Any]:
    return [e for e in events if e.event_type is kind]


async def test_a_long_run_stays_inside_the_window(reader: Any) -> None:
    provider = reader(40, recall_at=2)
    store = InMemoryEventStore()
    result = await runtime_for(provider, store, keep_recent_turns=2).run("read all chunks")
    assert result.status is RunState.COMPLETED, result.error
    assert result.output == "read 40 chunks"
    steps = [r for r in provider.requests if r.tools]
    assert max(request_tokens(r) for r in steps) <= WINDOW
    # without compaction the last request would be several windows long
    cp = await store.get_latest_checkpoint(result.run_id)
    assert cp is not None
    assert messages_tokens(cp.messages) > 4 * WINDOW
    # the transcript keeps every output in full
    outputs = [m["content"] for m in cp.messages if m.get("role") == "tool"]
    assert chunk_text(0) in outputs and chunk_text(39) in outputs
    events = await store.get_events(result.run_id)
    stages = [e.payload["stage"] for e in of(EventType.CONTEXT_COMPACTED, events)]
    assert "elide" in stages and "summary" in stages
    assert provider.summaries >= 1
    summary = next(
        e for e in of(EventType.CONTEXT_COMPACTED, events) if e.payload["stage"] == "summary"
    )
    assert summary.payload["summary"]["text"].startswith("Read chunks")
    assert summary.payload["tokens_after"] < summary.payload["tokens_before"]
    assert "usage" in summary.payload  # the summary call's tokens are billed to the run
    # recall brought an elided output back, from the event that holds it
    assert provider.recalled is not None
    recalled = int(re.search(r"chunk (\d+):", provider.recalled).group(1))  # type: ignore[union-attr]
    assert chunk_text(recalled) in provider.recalled


async def test_resume_continues_with_the_same_view(reader: Any) -> None:
    store = InMemoryEventStore()

    class Dies(reader):  # type: ignore[misc, valid-type]
        async def generate(self, request: ModelRequest) -> Any:
            if len([r for r in self.requests if r.tools]) == 25 and request.tools:
                self.requests.append(request)
                raise Crash
            return await super().generate(request)

    first = Dies(40)
    with pytest.raises(Crash):
        await runtime_for(first, store, keep_recent_turns=2).run("read", run_id="r1")
    before = [r for r in first.requests if r.tools][-1]
    cp = await store.get_latest_checkpoint("r1")
    assert cp is not None and cp.shaper_state["compaction"]["compactions"] >= 1

    second = reader(40)
    result = await runtime_for(second, store, keep_recent_turns=2).resume("r1")
    assert result.status is RunState.COMPLETED, result.error
    after = next(r for r in second.requests if r.tools)
    # the resumed call is the one the crash interrupted, shaped exactly the same
    assert after.step == before.step
    assert after.messages == before.messages


async def test_a_failed_summary_falls_back_to_a_placeholder(reader: Any) -> None:
    provider = reader(30, fail_summary=True)
    store = InMemoryEventStore()
    result = await runtime_for(provider, store, keep_recent_turns=2).run("read")
    assert result.status is RunState.COMPLETED, result.error
    events = await store.get_events(result.run_id)
    summary = next(
        e for e in of(EventType.CONTEXT_COMPACTED, events) if e.payload["stage"] == "summary"
    )
    assert summary.payload["summary"]["fallback"] == "RuntimeError: summary model is down"
    assert "earlier messages were compacted" in summary.payload["summary"]["text"]


async def test_an_output_too_big_for_the_window_stops_the_run(reader: Any) -> None:
    from avo import FunctionTool

    huge = FunctionTool(
        name="read_chunk",
        description="Read one chunk.",
        arguments_model=ChunkArgs,
        function=lambda args: f"chunk {args.n}: " + "x" * (WINDOW * 5),
    )
    provider = reader(3)
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=provider,
        tools=[huge],
        event_store=store,
        context_window=WINDOW,
        bundles=[CompactionBundle({"keep_recent_turns": 1})],
    )
    result = await runtime.run("read")
    # the huge output is elided even though it is recent, so the run goes on
    assert result.status is RunState.COMPLETED, result.error
    stages = [
        e.payload["stage"]
        for e in of(EventType.CONTEXT_COMPACTED, await store.get_events(result.run_id))
    ]
    assert "recent" in stages

    task = "y" * (WINDOW * 5)  # the task itself can never be elided
    result = await runtime.run(task)
    assert result.status is RunState.STOPPED
    assert result.stop_reason is StopReason.TOKEN_BUDGET_EXCEEDED
    assert "even after compaction" in (result.error or "")
    assert f"context window of reader-1 is {WINDOW} tokens" in (result.error or "")


async def test_below_the_threshold_nothing_changes(reader: Any) -> None:
    provider = reader(2)
    store = InMemoryEventStore()
    result = await runtime_for(provider, store).run("read")
    events = await store.get_events(result.run_id)
    assert of(EventType.CONTEXT_COMPACTED, events) == []
    shaped = of(EventType.REQUEST_SHAPED, events)
    assert len(shaped) == 1  # the first call records the (empty) view once
    assert shaped[0].payload["shapers"][0]["shaping"] == {"splices": []}


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match=r"target \(0.8\) must be below threshold \(0.75\)"):
        CompactionSettings(target=0.8)
    assert CompactionPolicy().carry_over is True


async def test_replay_rebuilds_compacted_requests(reader: Any) -> None:
    provider = reader(30)
    store = InMemoryEventStore()
    result = await runtime_for(provider, store, keep_recent_turns=2).run("read")
    events = await store.get_events(result.run_id)
    cp = await store.get_latest_checkpoint(result.run_id)
    assert cp is not None
    records = {e.payload["step"]: e.payload for e in of(EventType.REQUEST_SHAPED, events)}
    seen: list[dict[str, Any]] = []
    for request in [r for r in provider.requests if r.tools]:
        if request.step in records:
            seen.append(records[request.step])
        # the transcript at this step: every message before the call's own response
        transcript = cp.messages[: _transcript_size(cp.messages, request)]
        assert replay(transcript, seen) == request.messages


def _transcript_size(messages: list[Any], request: ModelRequest) -> int:
    """How long the transcript was when ``request`` was made (its last message is the end)."""
    last = request.messages[-1]
    return max(i for i, m in enumerate(messages) if m is last or m == last) + 1
