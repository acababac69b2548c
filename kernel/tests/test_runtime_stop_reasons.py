"""Every StopReason reached through a real AgentRuntime run."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from avo import AgentRuntime, EventType, FakeProvider, LoopPolicy, RunState, StopReason
from avo.circuit_breaker import CircuitBreakerPolicy
from avo.exceptions import ProviderError
from avo.hooks import HookEvent, HookRegistry, make_blocking_hook
from avo.models import ToolMetadata
from avo.retry import RetryPolicy


class StepClock:
    """A clock that advances ``step`` seconds every time it is read."""

    def __init__(self, step: float) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.step = timedelta(seconds=step)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


async def finish(runtime: AgentRuntime, task: str = "task") -> tuple[Any, list[Any]]:
    result = await runtime.run(task)
    events = await runtime.event_store.get_events(result.run_id)
    return result, events


def kinds(events: list[Any]) -> list[str]:
    return [e.event_type.value for e in events]


def policy_event(events: list[Any]) -> dict[str, Any]:
    return next(e.payload for e in events if e.event_type is EventType.POLICY_TRIGGERED)


async def test_completed(answer: Any) -> None:
    result, events = await finish(AgentRuntime(provider=FakeProvider([answer("hi")])))
    assert (result.status, result.stop_reason, result.output) == (
        RunState.COMPLETED,
        StopReason.COMPLETED,
        "hi",
    )
    assert kinds(events)[-1] == "run_completed"


async def test_max_steps(call: Any, echo_tool: Any) -> None:
    provider = FakeProvider([call(n=i) for i in range(10)])
    runtime = AgentRuntime(provider=provider, tools=[echo_tool], policy=LoopPolicy(max_steps=3))
    result, events = await finish(runtime)
    assert (result.status, result.stop_reason, result.steps) == (
        RunState.STOPPED,
        StopReason.MAX_STEPS,
        3,
    )
    assert policy_event(events)["stop_reason"] == "max_steps"
    assert result.error == "Run stopped: max_steps (3) reached."


async def test_max_runtime(call: Any, echo_tool: Any) -> None:
    runtime = AgentRuntime(
        provider=FakeProvider([call(n=i) for i in range(10)]),
        tools=[echo_tool],
        policy=LoopPolicy(max_runtime_seconds=5),
        clock=StepClock(1.0),
    )
    result, events = await finish(runtime)
    assert result.stop_reason is StopReason.MAX_RUNTIME and result.status is RunState.STOPPED
    assert policy_event(events)["elapsed_seconds"] >= 5


async def test_token_budget(call: Any, echo_tool: Any) -> None:
    provider = FakeProvider(
        [
            {
                "tool_call": {"name": "echo", "arguments": {"n": i}},
                "usage": {"input_tokens": 40, "output_tokens": 10},
            }
            for i in range(5)
        ]
    )
    runtime = AgentRuntime(
        provider=provider, tools=[echo_tool], policy=LoopPolicy(max_total_tokens=120)
    )
    result, _ = await finish(runtime)
    assert result.stop_reason is StopReason.TOKEN_BUDGET_EXCEEDED
    assert result.token_usage.total_tokens == 150 and result.steps == 3


async def test_repeated_action(call: Any, echo_tool: Any, effects: list[Any]) -> None:
    provider = FakeProvider([call(n=1)], repeat_last=True)
    runtime = AgentRuntime(
        provider=provider, tools=[echo_tool], policy=LoopPolicy(repeated_action_limit=3)
    )
    result, _ = await finish(runtime)
    assert result.stop_reason is StopReason.REPEATED_ACTION
    assert len(effects) == 2  # the third identical call is stopped before it runs


async def test_no_progress(call: Any, echo_tool: Any) -> None:
    # distinct arguments, identical observations
    provider = FakeProvider(
        [call(text="same", n=0, call_id=f"c{i}") for i in range(1)]
        + [call(text="same", n=0) for _ in range(1)]
    )
    from pydantic import BaseModel

    from avo import FunctionTool

    class A(BaseModel):
        n: int

    constant = FunctionTool(
        name="poll",
        description="Poll.",
        arguments_model=A,
        function=lambda a: {"status": "pending"},
    )
    provider = FakeProvider([call("poll", n=i) for i in range(10)])
    runtime = AgentRuntime(
        provider=provider, tools=[constant], policy=LoopPolicy(no_progress_window=3)
    )
    result, _ = await finish(runtime)
    assert result.stop_reason is StopReason.NO_PROGRESS and result.steps == 3


async def test_consecutive_errors_fire_notification(answer: Any, waits: Any) -> None:
    notes: list[str] = []
    hooks = HookRegistry()
    hooks.register(HookEvent.NOTIFICATION, lambda ctx: notes.append(ctx.notification))
    provider = FakeProvider([ProviderError("busy") for _ in range(5)] + [answer()])
    runtime = AgentRuntime(
        provider=provider,
        hooks=hooks,
        policy=LoopPolicy(consecutive_error_limit=3, retry=RetryPolicy(max_attempts=1)),
        sleep=waits,
    )
    result, events = await finish(runtime)
    assert result.stop_reason is StopReason.CONSECUTIVE_ERRORS
    failures = [e.payload for e in events if e.event_type is EventType.MODEL_FAILED]
    assert [f["consecutive_errors"] for f in failures] == [1, 2, 3]
    assert failures[0]["error_type"] == "ProviderError" and failures[0]["retryable"] is True
    message = "Run stopped: 3 consecutive errors (limit 3). Last error: busy"
    assert notes == [message] and result.error == message


async def test_only_failures_that_exhausted_their_retries_count(answer: Any, waits: Any) -> None:
    # 3 attempts a round: 8 failures are two exhausted rounds (2 counted) and 2 retries.
    provider = FakeProvider([ProviderError(f"busy {i}") for i in range(8)] + [answer("ok")])
    policy = LoopPolicy(
        consecutive_error_limit=3, retry=RetryPolicy(max_attempts=3, initial_delay=1, jitter=0)
    )
    runtime = AgentRuntime(provider=provider, policy=policy, sleep=waits)
    result, events = await finish(runtime)
    assert (result.status, result.output, result.steps) == (RunState.COMPLETED, "ok", 1)
    failures = [e.payload for e in events if e.event_type is EventType.MODEL_FAILED]
    assert [f["consecutive_errors"] for f in failures] == [0, 0, 1, 1, 1, 2, 2, 2]
    assert [f["attempt"] for f in failures] == [1, 2, 3, 1, 2, 3, 1, 2]
    # every failure is followed by a wait, on record in its event; each round's
    # backoff starts over (1, 2, 4), so a dead endpoint is given up on in seconds
    assert waits.delays == [1.0, 2.0, 4.0, 1.0, 2.0, 4.0, 1.0, 2.0]
    assert [f["retry_in_seconds"] for f in failures] == waits.delays
    checkpoints = [e for e in events if e.event_type is EventType.CHECKPOINT_CREATED]
    assert len(checkpoints) == 1 + 2 + 2  # created, 2 counted failures, decision, final


async def test_exhausted_retries_stop_naming_the_cause(waits: Any) -> None:
    error = ProviderError("OpenAI API returned HTTP 429: Rate limit reached", retry_after=2.5)
    provider = FakeProvider([error], repeat_last=True)
    policy = LoopPolicy(consecutive_error_limit=2, retry=RetryPolicy(max_attempts=2, jitter=0))
    result, events = await finish(AgentRuntime(provider=provider, policy=policy, sleep=waits))
    assert result.stop_reason is StopReason.CONSECUTIVE_ERRORS
    assert result.error == (
        "Run stopped: 2 consecutive errors (limit 2). "
        "Last error: OpenAI API returned HTTP 429: Rate limit reached"
    )
    # Retry-After is honoured for each wait; the last failure stops the run without one.
    assert waits.delays == [2.5, 2.5, 2.5]
    failures = [e.payload for e in events if e.event_type is EventType.MODEL_FAILED]
    assert [f["retry_in_seconds"] for f in failures] == [2.5, 2.5, 2.5, None]


async def test_retry_after_beyond_the_maximum_falls_back_to_backoff(
    answer: Any, waits: Any
) -> None:
    provider = FakeProvider([ProviderError("quota", retry_after=3600), answer()])
    policy = LoopPolicy(retry=RetryPolicy(initial_delay=0.25, jitter=0, max_retry_after=60))
    result, _ = await finish(AgentRuntime(provider=provider, policy=policy, sleep=waits))
    assert result.status is RunState.COMPLETED and waits.delays == [0.25]


async def test_retry_waits_never_outlast_max_runtime(waits: Any) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]

    async def sleep(delay: float) -> None:
        await waits(delay)
        now[0] += timedelta(seconds=delay)

    provider = FakeProvider([ProviderError("busy", retry_after=50)], repeat_last=True)
    policy = LoopPolicy(max_runtime_seconds=120, retry=RetryPolicy(max_attempts=9))
    runtime = AgentRuntime(provider=provider, policy=policy, sleep=sleep, clock=lambda: now[0])
    result, _ = await finish(runtime)
    assert result.stop_reason is StopReason.MAX_RUNTIME
    assert waits.delays == [50, 50, 20]


async def test_retryable_error_then_success(answer: Any, waits: Any) -> None:
    provider = FakeProvider([ProviderError("hiccup"), answer("ok")])
    result, _ = await finish(AgentRuntime(provider=provider, sleep=waits))
    assert result.status is RunState.COMPLETED and result.output == "ok"
    assert len(waits.delays) == 1 and 0.45 <= waits.delays[0] <= 0.55  # 0.5 s, 10% jitter


STOP_ON_DENIAL = LoopPolicy(on_tool_denied="stop")


async def test_policy_denied_by_callback(call: Any, echo_tool: Any, effects: list[Any]) -> None:
    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1)]),
        tools=[echo_tool],
        approval_callback=lambda c: False,
        policy=STOP_ON_DENIAL,
    )
    result, events = await finish(runtime)
    assert result.stop_reason is StopReason.POLICY_DENIED and effects == []
    denied = next(e.payload for e in events if e.event_type is EventType.TOOL_DENIED)
    assert denied["blocked_by"] == "approval"


async def test_policy_denied_by_hook(call: Any, echo_tool: Any, effects: list[Any]) -> None:
    hooks = HookRegistry()
    hooks.register(HookEvent.PRE_TOOL_USE, make_blocking_hook("no echo today"))
    approvals: list[str] = []
    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1)]),
        tools=[echo_tool],
        hooks=hooks,
        approval_callback=lambda c: approvals.append(c.name) or True,
        policy=STOP_ON_DENIAL,
    )
    result, events = await finish(runtime)
    assert result.stop_reason is StopReason.POLICY_DENIED and effects == [] and approvals == []
    denied = next(e.payload for e in events if e.event_type is EventType.TOOL_DENIED)
    assert denied == {
        "tool_call_id": denied["tool_call_id"],
        "name": "echo",
        "reason": "no echo today",
        "blocked_by": "hook",
    }


async def test_user_cancelled(call: Any) -> None:
    from pydantic import BaseModel

    from avo import FunctionTool

    class A(BaseModel):
        n: int

    started = asyncio.Event()

    async def hang(args: A) -> None:
        started.set()
        await asyncio.sleep(60)

    runtime = AgentRuntime(
        provider=FakeProvider([call("hang", n=1)]),
        tools=[FunctionTool(name="hang", description="Hang.", arguments_model=A, function=hang)],
    )
    task = asyncio.create_task(runtime.run("t"))
    await started.wait()
    task.cancel()
    result = await task
    assert (result.status, result.stop_reason) == (RunState.CANCELLED, StopReason.USER_CANCELLED)
    assert result.error == "Run cancelled by the caller."
    events = await runtime.event_store.get_events(result.run_id)
    assert kinds(events)[-3:] == ["checkpoint_created", "state_changed", "run_cancelled"]


async def test_provider_error_non_retryable(answer: Any) -> None:
    provider = FakeProvider([ProviderError("bad key", retryable=False), answer()])
    result, _ = await finish(AgentRuntime(provider=provider))
    assert (result.status, result.stop_reason) == (RunState.FAILED, StopReason.PROVIDER_ERROR)
    assert result.error == "Provider error: bad key"


async def test_exhausted_script_is_a_provider_error() -> None:
    result, _ = await finish(AgentRuntime(provider=FakeProvider([])))
    assert result.stop_reason is StopReason.PROVIDER_ERROR


async def test_tool_error_from_a_tool_that_raises_outside_the_contract(call: Any) -> None:
    class Rogue:
        metadata = ToolMetadata(name="rogue", description="Breaks.", input_schema={})

        async def invoke(self, arguments: Any) -> Any:
            raise RuntimeError("disk on fire")

    runtime = AgentRuntime(provider=FakeProvider([call("rogue")]), tools=[Rogue()])
    result, events = await finish(runtime)
    assert (result.status, result.stop_reason) == (RunState.FAILED, StopReason.TOOL_ERROR)
    assert result.error == "Tool 'rogue' raised RuntimeError: disk on fire"
    assert "tool_failed" in kinds(events)  # the started call has a durable result


async def test_invalid_model_response() -> None:
    bad = {"content": "a", "tool_call": {"name": "x"}}
    result, events = await finish(AgentRuntime(provider=FakeProvider([bad])))
    assert (result.status, result.stop_reason) == (
        RunState.FAILED,
        StopReason.INVALID_MODEL_RESPONSE,
    )
    assert "exactly one of content or tool_call" in (result.error or "")
    assert "model_failed" in kinds(events)


async def test_internal_error(call: Any, echo_tool: Any) -> None:
    def explode(c: Any) -> bool:
        raise ZeroDivisionError("oops")

    runtime = AgentRuntime(
        provider=FakeProvider([call(n=1)]), tools=[echo_tool], approval_callback=explode
    )
    result, _ = await finish(runtime)
    assert (result.status, result.stop_reason) == (RunState.FAILED, StopReason.INTERNAL_ERROR)
    assert result.error == "Internal error: ZeroDivisionError: oops"


async def test_circuit_breaker_opens(answer: Any, waits: Any) -> None:
    provider = FakeProvider([ProviderError("down") for _ in range(5)] + [answer()])
    policy = LoopPolicy(
        consecutive_error_limit=10, circuit_breaker=CircuitBreakerPolicy(failure_threshold=2)
    )
    result, events = await finish(AgentRuntime(provider=provider, policy=policy, sleep=waits))
    assert result.stop_reason is StopReason.PROVIDER_ERROR
    assert "circuit breaker is open" in (result.error or "")
    assert len([e for e in events if e.event_type is EventType.MODEL_FAILED]) == 3


@pytest.mark.parametrize("reason", list(StopReason))
def test_every_stop_reason_is_covered_here(reason: StopReason) -> None:
    covered = {
        "completed",
        "max_steps",
        "max_runtime",
        "token_budget_exceeded",
        "repeated_action",
        "no_progress",
        "consecutive_errors",
        "policy_denied",
        "user_cancelled",
        "provider_error",
        "tool_error",
        "invalid_model_response",
        "internal_error",
        "output_truncated",  # test_runtime_answers.py
        "model_refused",  # test_runtime_answers.py
    }
    assert reason.value in covered


async def test_cancel_during_a_store_write_that_lands(call: Any, echo_tool: Any) -> None:
    """A write interrupted by cancellation may still be stored: the runtime re-reads the log."""
    from avo.storage.memory import InMemoryEventStore

    class SlowWrites(InMemoryEventStore):
        armed = False

        async def append_event_and_update_run(self, event: Any, run: Any) -> Any:
            stored = await super().append_event_and_update_run(event, run)
            if self.armed and event.payload.get("to_state") == "tool_executing":
                await asyncio.sleep(60)  # the write landed; the caller is cancelled here
            return stored

    store = SlowWrites()
    store.armed = True
    runtime = AgentRuntime(provider=FakeProvider([call(n=1)]), tools=[echo_tool], event_store=store)
    task = asyncio.create_task(runtime.run("t"))
    for _ in range(200):
        await asyncio.sleep(0)
        events = [e for run_id in store._runs for e in await store.get_events(run_id)]
        if any(e.payload.get("to_state") == "tool_executing" for e in events):
            break
    task.cancel()
    result = await task
    assert (result.status, result.stop_reason) == (RunState.CANCELLED, StopReason.USER_CANCELLED)
    kinds_ = [e.event_type.value for e in await store.get_events(result.run_id)]
    assert kinds_.count("tool_approved") == 1 and kinds_[-1] == "run_cancelled"
    final = (await store.get_events(result.run_id))[-2].payload
    assert final == {"from_state": "tool_executing", "to_state": "cancelled"}
