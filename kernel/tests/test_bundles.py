"""Plugin bundles: tools, instructions, shapers and hooks set up per run, closed in reverse."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, EventType, FakeProvider, FunctionTool, RunState
from avo.bundles import BundleParts, BundleRun
from avo.exceptions import BundleError, ProviderError
from avo.hooks import HookDecision, HookEvent
from avo.models import ModelRequest
from avo.shaping import Shaping
from avo.storage.memory import InMemoryEventStore


class Crash(BaseException):
    """Stands in for the process dying."""


class NoArgs(BaseModel):
    """No arguments."""


class Recorder(list[str]):
    """The order things happened in."""


class Kit:
    """A bundle with a tool, an instruction, a shaper and a hook."""

    def __init__(self, name: str, log: Recorder, *, fail: bool = False) -> None:
        self.name = name
        self.log = log
        self.fail = fail
        self.runs: list[BundleRun] = []

    async def setup(self, run: BundleRun) -> BundleParts:
        self.log.append(f"setup {self.name}")
        self.runs.append(run)
        if self.fail:
            raise RuntimeError("server did not start")
        tool = FunctionTool(
            name=f"{self.name}_ping",
            description="Ping.",
            arguments_model=NoArgs,
            function=lambda args: "pong",
        )
        log = self.log

        def hook(context: Any) -> HookDecision:
            log.append(f"hook {self.name} {context.tool_call.name}")
            return HookDecision.allow()

        class Marker:
            name = f"{self.name}_marker"

            def avo_prepare_request(self, request: ModelRequest) -> Shaping:
                return Shaping.insert(len(request.messages), {"role": "user", "content": "(mark)"})

        return BundleParts(
            tools=[tool],
            instructions=[f"Use {self.name} wisely."],
            shapers=[Marker()],
            hooks=[(HookEvent.PRE_TOOL_USE, hook)],
            problems={"extra": "not configured"} if self.name == "b" else {},
        )

    async def close(self) -> None:
        self.log.append(f"close {self.name}")


async def test_bundle_parts_reach_the_run_and_are_closed_in_reverse(call: Any, answer: Any) -> None:
    log = Recorder()
    provider = FakeProvider([call("a_ping"), call("b_ping"), answer()])
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=provider, event_store=store, bundles=[Kit("a", log), Kit("b", log)]
    )
    result = await runtime.run("task", system_prompt="You are terse.")
    assert result.status is RunState.COMPLETED
    assert log == [
        "setup a",
        "setup b",
        "hook a a_ping",
        "hook b a_ping",
        "hook a b_ping",
        "hook b b_ping",
        "close b",
        "close a",
    ]
    first = provider.requests[0]
    assert [t.name for t in first.tools] == ["a_ping", "b_ping"]
    assert first.messages[0] == {"role": "system", "content": "You are terse."}
    assert first.messages[1] == {
        "role": "system",
        "content": "Use a wisely.\n\nUse b wisely.",
    }
    assert first.messages[-2:] == [
        {"role": "user", "content": "(mark)"},
        {"role": "user", "content": "(mark)"},
    ]
    # after the run the runtime has its own tools and hooks again
    assert runtime.tools.names() == [] and runtime.hooks is None
    events = await store.get_events(result.run_id)
    created = events[0].payload
    assert created["bundles"][1] == {
        "name": "b",
        "tools": ["b_ping"],
        "shapers": ["b_marker"],
        "instructions": 1,
        "hooks": 1,
        "problems": {"extra": "not configured"},
    }
    cp = await store.get_latest_checkpoint(result.run_id)
    assert cp is not None and all(m.get("content") != "(mark)" for m in cp.messages)


async def test_a_failing_setup_closes_the_others_and_starts_nothing(answer: Any) -> None:
    log = Recorder()
    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=FakeProvider([answer()]),
        event_store=store,
        bundles=[Kit("a", log), Kit("bad", log, fail=True), Kit("c", log)],
    )
    with pytest.raises(BundleError) as info:
        await runtime.run("task", run_id="r1")
    assert "bundle 'bad' could not be set up for run r1: RuntimeError: server did not start" in (
        str(info.value)
    )
    assert log == ["setup a", "setup bad", "close a"]
    assert await store.get_run("r1") is None


@pytest.mark.parametrize("ending", ["failed", "crashed"])
async def test_bundles_close_when_the_run_fails_or_crashes(ending: str) -> None:
    log = Recorder()

    class Dying(FakeProvider):
        async def generate(self, request: ModelRequest) -> Any:
            if ending == "crashed":
                raise Crash
            raise ProviderError("down", retryable=False)

    runtime = AgentRuntime(provider=Dying([]), bundles=[Kit("a", log), Kit("b", log)])
    if ending == "crashed":
        with pytest.raises(Crash):
            await runtime.run("task")
    else:
        result = await runtime.run("task")
        assert result.status is RunState.FAILED
    assert log[-2:] == ["close b", "close a"]


async def test_bundles_are_set_up_again_on_resume(call: Any, answer: Any) -> None:
    log = Recorder()
    script = [call("a_ping"), answer()]

    class CrashSecond(FakeProvider):
        calls = 0

        async def generate(self, request: ModelRequest) -> Any:
            type(self).calls += 1
            if type(self).calls == 2:
                raise Crash
            return await super().generate(request)

    store = InMemoryEventStore()
    kit = Kit("a", log)
    with pytest.raises(Crash):
        await AgentRuntime(provider=CrashSecond(script), event_store=store, bundles=[kit]).run(
            "t", run_id="r1"
        )
    again = AgentRuntime(provider=FakeProvider(script), event_store=store, bundles=[kit])
    result = await again.resume("r1")
    assert result.status is RunState.COMPLETED
    assert [r.resumed for r in kit.runs] == [False, True]
    assert log.count("close a") == 2
    resumed = [e for e in await store.get_events("r1") if e.event_type is EventType.RUN_RESUMED]
    assert resumed[0].payload["bundles"][0]["tools"] == ["a_ping"]


async def test_a_tool_name_clash_is_refused(answer: Any) -> None:
    log = Recorder()
    tool = FunctionTool(name="a_ping", description="x", arguments_model=NoArgs, function=str)
    runtime = AgentRuntime(provider=FakeProvider([answer()]), tools=[tool], bundles=[Kit("a", log)])
    with pytest.raises(BundleError, match="already has a tool of that name"):
        await runtime.run("task")
    assert log == ["setup a", "close a"]


def test_an_object_without_setup_is_not_a_bundle() -> None:
    with pytest.raises(BundleError, match=r"has no setup\(\) method"):
        AgentRuntime(provider=FakeProvider([]), bundles=[object()])


def test_a_runtime_says_which_bundles_it_sets_up() -> None:
    log = Recorder()
    kits = [Kit("a", log), Kit("b", log)]
    runtime = AgentRuntime(provider=FakeProvider([]), event_store=InMemoryEventStore())
    assert runtime.bundles == ()
    runtime = AgentRuntime(
        provider=FakeProvider([]), event_store=InMemoryEventStore(), bundles=kits
    )
    assert runtime.bundles == tuple(kits)
    assert runtime.derive().bundles == tuple(kits)  # an engine's workflow runtime keeps them
    assert log == []  # nothing is set up until a run starts


async def test_bundle_tools_join_a_registry_of_the_runtimes_own_kind(
    call: Any, answer: Any
) -> None:
    from avo.models import ToolCall, ToolResult
    from avo.tools import ToolRegistry

    routed: list[str] = []

    class Remote(ToolRegistry):
        """A registry that runs its calls elsewhere (as an engine's workflow does)."""

        def with_tools(self, extra: Any) -> ToolRegistry:
            made = Remote(self.get(name) for name in self.names())
            for tool in extra:
                made.register(tool)
            return made

        async def invoke(self, call: ToolCall, *, completed_tool_call_ids: set[str]) -> ToolResult:
            routed.append(call.name)
            return await super().invoke(call, completed_tool_call_ids=completed_tool_call_ids)

    log = Recorder()
    runtime = AgentRuntime(
        provider=FakeProvider([call("a_ping"), answer()]),
        event_store=InMemoryEventStore(),
        tools=Remote(),
        bundles=[Kit("a", log)],
    )
    result = await runtime.run("task")
    assert result.status is RunState.COMPLETED, result.error
    assert routed == ["a_ping"]  # the bundle's tool went the registry's way
    assert type(runtime.tools) is Remote and "a_ping" not in runtime.tools  # restored
    with pytest.raises(BundleError, match="'a_ping'"):  # a clash still names the tool
        await AgentRuntime(
            provider=FakeProvider([answer()]),
            event_store=InMemoryEventStore(),
            tools=[
                FunctionTool(
                    name="a_ping",
                    description="x",
                    arguments_model=NoArgs,
                    function=lambda args: "x",
                )
            ],
            bundles=[Kit("a", Recorder())],
        ).run("task")
