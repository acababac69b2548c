"""The request seam: shapers change what one call sees, never the transcript."""

from __future__ import annotations

from typing import Any

import pytest

from avo import AgentRuntime, EventType, FakeProvider, RunState, StopReason
from avo.exceptions import ShapingError
from avo.models import ModelRequest, ToolMetadata
from avo.plugins import ShaperSpec, provides
from avo.shaping import Shaping, ShapingContext, Splice, bind_shaper, ordered, replay
from avo.storage.memory import InMemoryEventStore
from avo.testing.plugins import plugin_manager


class Crash(BaseException):
    """Stands in for the process dying."""


class Reminder:
    """Inserts a system reminder before the last message (a negative index)."""

    name = "reminder"

    def __init__(self, text: str = "Be brief.") -> None:
        self.shaping = Shaping.insert(-1, {"role": "system", "content": text})

    def avo_prepare_request(self, request: ModelRequest, context: ShapingContext) -> Shaping:
        return self.shaping


class Counter:
    """Keeps a count in its checkpointed state; shows it as a system message."""

    name = "counter"
    order = 50

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def avo_prepare_request(self, context: ShapingContext) -> Shaping:
        count = int(context.state.get("count", 0)) + 1  # type: ignore[arg-type]
        self.seen.append(dict(context.state))
        context.set_state({"count": count})
        return Shaping.insert(0, {"role": "system", "content": f"call {count}"})


def events_of(kind: EventType, events: list[Any]) -> list[Any]:
    return [e for e in events if e.event_type is kind]


async def test_no_shapers_no_seam_and_no_events(call: Any, answer: Any, echo_tool: Any) -> None:
    provider = FakeProvider([call("echo", text="a"), answer()])
    store = InMemoryEventStore()
    runtime = AgentRuntime(provider=provider, tools=[echo_tool], event_store=store)
    result = await runtime.run("t")
    assert result.status is RunState.COMPLETED
    events = await store.get_events(result.run_id)
    assert not events_of(EventType.REQUEST_SHAPED, events)
    cp = await store.get_latest_checkpoint(result.run_id)
    assert cp is not None and cp.shaper_state == {}


async def test_shaper_changes_the_request_not_the_transcript(
    call: Any, answer: Any, echo_tool: Any
) -> None:
    provider = FakeProvider([call("echo", text="a"), call("echo", text="b"), answer()])
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=provider, tools=[echo_tool], event_store=store, shapers=[Reminder()]
    )
    result = await runtime.run("task")
    assert result.status is RunState.COMPLETED
    for request in provider.requests:
        assert request.messages[-2] == {"role": "system", "content": "Be brief."}
    cp = await store.get_latest_checkpoint(result.run_id)
    assert cp is not None
    assert all(m.get("content") != "Be brief." for m in cp.messages)
    shaped = events_of(EventType.REQUEST_SHAPED, await store.get_events(result.run_id))
    # the same Shaping object every step: recorded once
    assert len(shaped) == 1
    entry = shaped[0].payload["shapers"][0]
    assert entry["name"] == "reminder" and entry["changed"] is True
    assert entry["shaping"]["splices"] == [[-1, -1, [{"role": "system", "content": "Be brief."}]]]
    assert shaped[0].payload["messages_out"] == shaped[0].payload["messages_in"] + 1


async def test_order_and_chaining(answer: Any) -> None:
    seen: list[list[str]] = []

    class Second:
        name = "second"
        order = 900

        def avo_prepare_request(self, request: ModelRequest) -> None:
            seen.append([str(m.get("content")) for m in request.messages])
            return None

    provider = FakeProvider([answer()])
    runtime = AgentRuntime(provider=provider, shapers=[Second(), Counter(), Reminder("r")])
    await runtime.run("task")
    # counter (50) then reminder (500) then second (900), each seeing the previous result
    assert seen == [["call 1", "r", "task"]]
    assert [m["content"] for m in provider.requests[0].messages] == ["call 1", "r", "task"]


async def test_tools_hidden_and_added(answer: Any, echo_tool: Any) -> None:
    extra = ToolMetadata(name="look", description="Look.", input_schema={"type": "object"})

    class Gate:
        name = "gate"

        def avo_prepare_request(self) -> Shaping:
            return Shaping.tools(hide=["echo"], add=[extra])

    provider = FakeProvider([answer()])
    runtime = AgentRuntime(provider=provider, tools=[echo_tool], shapers=[Gate()])
    await runtime.run("task")
    assert [t.name for t in provider.requests[0].tools] == ["look"]
    assert runtime.tools.names() == ["echo"]


async def test_crashing_shaper_fails_closed(answer: Any) -> None:
    class Broken:
        name = "broken"

        def avo_prepare_request(self, request: ModelRequest) -> Shaping:
            raise ValueError("no luck")

    provider = FakeProvider([answer()])
    store = InMemoryEventStore()
    runtime = AgentRuntime(provider=provider, event_store=store, shapers=[Broken()])
    result = await runtime.run("task")
    assert result.status is RunState.FAILED
    assert result.stop_reason is StopReason.INTERNAL_ERROR
    assert result.error == (
        "Request shaper 'broken' failed: ValueError: no luck; the request was not sent."
    )
    assert provider.requests == []  # never sent unshaped


@pytest.mark.parametrize(
    ("splices", "problem"),
    [
        ((Splice(0, 9),), "outside the 1 messages"),
        ((Splice(1, 1), Splice(0, 0)), "overlapping or unsorted"),
    ],
)
async def test_bad_splices_fail_closed(answer: Any, splices: Any, problem: str) -> None:
    class Bad:
        name = "bad"

        def avo_prepare_request(self) -> Shaping:
            return Shaping(splices=splices)

    provider = FakeProvider([answer()])
    result = await AgentRuntime(provider=provider, shapers=[Bad()]).run("task")
    assert result.status is RunState.FAILED
    assert problem in (result.error or "")
    assert "the request was not sent" in (result.error or "")
    assert provider.requests == []


async def test_a_result_that_is_not_a_shaping_fails_closed(answer: Any) -> None:
    class Wrong:
        name = "wrong"

        def avo_prepare_request(self) -> str:
            return "nope"

    provider = FakeProvider([answer()])
    result = await AgentRuntime(provider=provider, shapers=[Wrong()]).run("task")
    assert result.status is RunState.FAILED
    assert "returned str; return a Shaping or None" in (result.error or "")


def test_binding_errors_are_clear() -> None:
    with pytest.raises(ShapingError, match="has no avo_prepare_request"):
        bind_shaper(object(), name="x")

    class Odd:
        def avo_prepare_request(self, request: Any, extra: Any) -> None:
            return None

    with pytest.raises(ShapingError, match="unknown arguments extra"):
        bind_shaper(Odd())
    with pytest.raises(ShapingError, match="two request shapers are named 'reminder'"):
        ordered([bind_shaper(Reminder()), bind_shaper(Reminder())])


class CrashOnce(FakeProvider):
    """Dies (like the process would) on one call, once."""

    def __init__(self, script: list[Any], *, at: int) -> None:
        super().__init__(script)
        self.at = at
        self.calls = 0

    async def generate(self, request: ModelRequest) -> Any:
        self.calls += 1
        if self.calls == self.at:
            raise Crash
        return await super().generate(request)


async def test_shaper_state_survives_resume(call: Any, answer: Any, echo_tool: Any) -> None:
    script = [call("echo", text="a"), call("echo", text="b"), answer()]
    store = InMemoryEventStore()
    counter = Counter()
    first = AgentRuntime(
        provider=CrashOnce(script, at=3), tools=[echo_tool], event_store=store, shapers=[counter]
    )
    with pytest.raises(Crash):
        await first.run("task", run_id="r1")
    again = Counter()
    provider = FakeProvider(script)
    second = AgentRuntime(provider=provider, tools=[echo_tool], event_store=store, shapers=[again])
    result = await second.resume("r1")
    assert result.status is RunState.COMPLETED
    # the resumed run's shaper starts from the state checkpointed before the crash
    assert again.seen[0] == {"count": 3}
    assert provider.requests[0].messages[0] == {"role": "system", "content": "call 4"}


async def test_replay_rebuilds_every_request(call: Any, answer: Any, echo_tool: Any) -> None:
    provider = FakeProvider([call("echo", text="a"), call("echo", text="b"), answer()])
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=provider,
        tools=[echo_tool],
        event_store=store,
        shapers=[Counter(), Reminder()],
    )
    result = await runtime.run("task")
    events = await store.get_events(result.run_id)
    records: list[dict[str, Any]] = []
    steps = {e.payload["step"]: e.payload for e in events_of(EventType.REQUEST_SHAPED, events)}
    for request in provider.requests:
        if request.step in steps:
            records.append(steps[request.step])
        size = steps[request.step]["messages_in"] if request.step in steps else None
        transcript = [m for m in request.messages if m.get("role") != "system"]
        assert size is None or size == len(transcript)
        assert replay(transcript, records) == request.messages


async def test_shaper_plugins_register_through_the_manager() -> None:
    spec = ShaperSpec(name="reminder", factory=lambda settings: Reminder(), order=10)
    manager = plugin_manager(provides(spec))
    found = manager.get("shaper", "reminder")
    assert found is spec and found.order == 10
    assert bind_shaper(found.factory({}), order=found.order).order == 10


async def test_the_trace_tells_what_shaped_the_requests(answer: Any) -> None:
    runtime = AgentRuntime(
        provider=FakeProvider([answer()]), shapers=[Reminder()], context_window=9000
    )
    result = await runtime.run("task")
    trace = await runtime.inspect(result.run_id)
    shaped = [e for e in trace.entries if e.event_type is EventType.REQUEST_SHAPED]
    assert shaped[0].summary.startswith("request shaped by reminder: 1 -> 2 messages, ~")
    assert shaped[0].summary.endswith("of 9000 (config)")


async def test_the_estimate_learns_how_the_provider_counts(call: Any, echo_tool: Any) -> None:
    from avo import ModelResponse
    from avo.models import TokenUsage

    class Counting(FakeProvider):
        """Reports three times the kernel's estimate of each request as its input tokens."""

        async def generate(self, request: ModelRequest) -> Any:
            from avo.context_window import messages_tokens, tools_tokens

            response = await super().generate(request)
            size = messages_tokens(request.messages) + tools_tokens(request.tools)
            return response.model_copy(update={"usage": TokenUsage(input_tokens=3 * size)})

    class Shrinking(FakeProvider):
        async def generate(self, request: ModelRequest) -> Any:
            response = await super().generate(request)
            return response.model_copy(update={"usage": TokenUsage(input_tokens=1)})

    for provider_type, expected in ((Counting, 3.0), (Shrinking, 1.0)):
        provider = provider_type([call("echo", text="a"), ModelResponse(content="done")])
        store = InMemoryEventStore()
        runtime = AgentRuntime(
            provider=provider,
            tools=[echo_tool],
            event_store=store,
            shapers=[Counter()],  # changes every call: every call is recorded
        )
        result = await runtime.run("task")
        shaped = [
            e
            for e in await store.get_events(result.run_id)
            if e.event_type is EventType.REQUEST_SHAPED
        ]
        assert shaped[0].payload["estimate_scale"] == 1.0  # nothing reported yet
        assert abs(shaped[-1].payload["estimate_scale"] - expected) < 0.2, provider_type
