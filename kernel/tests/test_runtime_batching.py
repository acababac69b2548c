"""The runtime's write buffer: events reach the store in one batch per durable boundary.

A tool step is two store writes on a store with ``append_batch``; a store without
it receives the very same events through the single-event methods; whatever
precedes a tool's effect is stored before the tool runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, FunctionTool, RunState
from avo.events import AgentEvent
from avo.exceptions import EventInvariantError, StaleWriteError, StorageError
from avo.models import replaced
from avo.storage.memory import InMemoryEventStore


class CountingStore(InMemoryEventStore):
    """Counts every write call by method."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        self.writes.append("append_event")
        return await super().append_event(event)

    async def append_event_and_update_run(self, event: AgentEvent, run: Any) -> Any:
        self.writes.append("append_event_and_update_run")
        return await super().append_event_and_update_run(event, run)

    async def save_checkpoint(self, checkpoint: Any, event: AgentEvent) -> Any:
        self.writes.append("save_checkpoint")
        return await super().save_checkpoint(checkpoint, event)

    async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
        self.writes.append("append_batch")
        return await super().append_batch(run, events, checkpoint)

    async def finalize_run(self, run: Any, state_event: Any, terminal_event: Any) -> Any:
        self.writes.append("finalize_run")
        return await super().finalize_run(run, state_event, terminal_event)


class SingleEventStore(CountingStore):
    """A third-party-like store without the optional batch method."""

    append_batch = None  # type: ignore[assignment]


def _shape(events: list[AgentEvent]) -> list[tuple[int, EventType, Any]]:
    ids: dict[Any, int] = {}  # the kernel mints call ids per run: compare them by first use
    shape = []
    for e in events:
        call_id = e.payload.get("tool_call_id")
        key = e.payload.get("to_state") or (ids.setdefault(call_id, len(ids)) if call_id else None)
        shape.append((e.sequence, e.event_type, key))
    return shape


async def test_a_tool_step_is_two_batches(call: Any, answer: Any, echo_tool: Any) -> None:
    store = CountingStore()
    script = [call(n=1), call(n=2), call(n=3), answer("fin")]
    runtime = AgentRuntime(provider=FakeProvider(script), tools=[echo_tool], event_store=store)
    result = await runtime.run("t")
    assert result.status is RunState.COMPLETED
    # created: one batch before the first provider call; each tool step: one
    # before the tool runs, one before the next provider call; the answer step:
    # its decision checkpoint, then the final checkpoint before finalize_run.
    assert store.writes.count("append_batch") == 1 + 2 * 3 + 2
    assert store.writes[-1] == "finalize_run"
    assert "append_event" not in store.writes
    assert "save_checkpoint" not in store.writes


async def test_without_append_batch_the_same_log_is_written(
    call: Any, answer: Any, echo_tool: Any
) -> None:
    script = [call(call_id="c1", n=1), call(call_id="c2", n=2), answer("fin")]
    batched, single = CountingStore(), SingleEventStore()
    logs = []
    for store in (batched, single):
        runtime = AgentRuntime(provider=FakeProvider(script), tools=[echo_tool], event_store=store)
        result = await runtime.run("t", run_id="r")
        assert result.status is RunState.COMPLETED
        logs.append(await store.get_events("r"))
        assert (await store.get_latest_checkpoint("r")) is not None
    assert _shape(logs[0]) == _shape(logs[1])
    assert "append_batch" not in single.writes
    assert {"append_event", "append_event_and_update_run", "save_checkpoint"} <= set(single.writes)
    head_a, head_b = await batched.get_run("r"), await single.get_run("r")
    assert head_a is not None and head_b is not None
    assert (head_a.state, head_a.steps, head_a.output) == (head_b.state, head_b.steps, "fin")


async def test_what_precedes_a_tool_effect_is_stored_before_it_runs(answer: Any, call: Any) -> None:
    store = InMemoryEventStore()
    seen: list[list[EventType]] = []

    class Args(BaseModel):
        n: int

    async def peek(args: Args) -> str:
        seen.append([e.event_type for e in await store.get_events("r")])
        return "ok"

    tool = FunctionTool(name="peek", description="Peek.", arguments_model=Args, function=peek)
    script = [call("peek", n=1), answer("fin")]
    runtime = AgentRuntime(provider=FakeProvider(script), tools=[tool], event_store=store)
    await runtime.run("t", run_id="r")
    (stored,) = seen
    assert stored[-1] is EventType.TOOL_STARTED
    for kind in (EventType.MODEL_RESPONDED, EventType.TOOL_APPROVED, EventType.CHECKPOINT_CREATED):
        assert kind in stored


async def test_a_store_that_renumbers_means_another_writer(
    call: Any, answer: Any, echo_tool: Any
) -> None:
    class Renumbering(InMemoryEventStore):
        async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
            stored = await super().append_batch(run, events, checkpoint)
            return [replaced(e, sequence=e.sequence + 1) for e in stored]

    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1), answer()]), tools=[echo_tool], event_store=Renumbering()
    )
    with pytest.raises(StorageError, match="another writer appended to this run"):
        await runtime.run("t")


async def test_a_failed_batch_write_ends_the_run_from_what_is_stored(
    call: Any, answer: Any, echo_tool: Any, effects: list[Any]
) -> None:
    class FailsOnce(InMemoryEventStore):
        armed = True

        async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
            if self.armed and any(e.event_type is EventType.TOOL_STARTED for e in events):
                self.armed = False
                raise RuntimeError("driver bug")
            return await super().append_batch(run, events, checkpoint)

    store = FailsOnce()
    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1), answer()]), tools=[echo_tool], event_store=store
    )
    result = await runtime.run("t", run_id="r")
    assert result.status is RunState.FAILED
    assert result.error is not None and "driver bug" in result.error
    assert effects == []  # TOOL_STARTED never became durable, so the tool never ran
    kinds = [e.event_type for e in await store.get_events("r")]
    assert EventType.TOOL_STARTED not in kinds
    assert kinds[-1] is EventType.RUN_FAILED
    assert [e.sequence for e in await store.get_events("r")] == list(range(1, len(kinds) + 1))


async def test_checkpoints_and_requests_hold_the_transcript_of_their_moment(
    call: Any, answer: Any, echo_tool: Any
) -> None:
    """Copies of the transcript are shared while it is unchanged, never mutated later."""

    class Recording(InMemoryEventStore):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[tuple[Any, list[dict[str, Any]], int]] = []

        async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
            if checkpoint is not None:
                self.seen.append((checkpoint, checkpoint.messages, len(checkpoint.messages)))
            return await super().append_batch(run, events, checkpoint)

    store = Recording()
    provider = FakeProvider([call(n=1), call(n=2), answer("fin")])
    runtime = AgentRuntime(provider=provider, tools=[echo_tool], event_store=store)
    result = await runtime.run("t")
    assert result.status is RunState.COMPLETED
    lengths = [length for _, _, length in store.seen]
    # the first checkpoint holds the task; a decision checkpoint comes before its
    # tool-call message is appended, so it shares the transcript of the one before
    assert lengths == [1, 1, 3, 3, 5, 5, 6], lengths
    assert store.seen[2][1] is store.seen[3][1]  # one copy, shared while unchanged
    for checkpoint, messages, length in store.seen:  # none grew after it was stored
        assert checkpoint.messages is messages and len(messages) == length
    requests = provider.requests
    assert [len(r.messages) for r in requests] == [1, 3, 5]
    # each request carries the transcript of the checkpoint stored just before it
    for request, index in zip(requests, (1, 3, 5), strict=True):
        assert request.messages is store.seen[index][1]


async def test_the_in_memory_store_folds_runtime_batches_without_checking_them_twice(
    call: Any, answer: Any, echo_tool: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime validated each event against a log built from the same events."""
    from avo.events import RunLogState

    store = InMemoryEventStore()
    accept = RunLogState.accept

    def accept_unless_stored(log: RunLogState, event: AgentEvent) -> None:
        if log is store._logs.get(log.run_id):
            raise AssertionError("a runtime batch that follows the stored log was re-validated")
        accept(log, event)

    monkeypatch.setattr(RunLogState, "accept", accept_unless_stored)
    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1), call(n=2), answer("fin")]),
        tools=[echo_tool],
        event_store=store,
    )
    result = await runtime.run("t")
    assert result.status is RunState.COMPLETED
    events = await store.get_events(result.run_id)
    # the folded summary is exactly what validating the stored log gives
    assert store._logs[result.run_id] == RunLogState.from_events(result.run_id, events)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))


async def test_a_validated_batch_that_does_not_follow_the_log_is_checked_in_full() -> None:
    from avo.storage.batch import ValidatedBatch
    from avo.testing.store_values import event, start_run

    store = InMemoryEventStore()
    run_id = await start_run(store)
    run = await store.get_run(run_id)
    assert run is not None
    stale = event(run_id, EventType.TOOL_COMPLETED, tool_call_id="never-started")
    stale = replaced(stale, sequence=2)  # numbered from an older view of the log
    with pytest.raises(StaleWriteError, match="another writer appended"):
        await store.append_batch(run, ValidatedBatch([stale]))
    unnumbered = event(run_id, EventType.TOOL_COMPLETED, tool_call_id="never-started")
    with pytest.raises(EventInvariantError, match="without tool_started"):
        await store.append_batch(run, ValidatedBatch([unnumbered]))
    before = len(await store.get_events(run_id))
    fresh = event(run_id, EventType.TOOL_COMPLETED, tool_call_id="never-started")
    with pytest.raises(EventInvariantError, match="without tool_started"):  # a plain list
        await store.append_batch(run, [replaced(fresh, sequence=before + 1)])
    assert len(await store.get_events(run_id)) == before
