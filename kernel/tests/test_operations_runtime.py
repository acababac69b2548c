"""The operations seams of AgentRuntime: rate_limiter= and budget= in real runs."""

from decimal import Decimal

import pytest

from avo.budget import BudgetChecker, BudgetConfig
from avo.events import EventType
from avo.models import ModelResponse, TokenUsage, ToolCall
from avo.providers.fake import FakeProvider
from avo.rate_limit import RateLimitConfig, RateLimiter
from avo.runtime import AgentRuntime
from avo.state import RunState, StopReason


def tool_turn(i: int, input_tokens: int, output_tokens: int) -> ModelResponse:
    return ModelResponse(
        tool_call=ToolCall(name="missing", arguments={"i": i}),
        usage=TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens),
    )


async def test_hard_budget_stops_the_run_with_a_stop_reason_and_event():
    # 1 USD per 1k input, 2 USD per 1k output; hard limit 1 USD.
    checker = BudgetChecker(
        BudgetConfig(warning_usd=Decimal("0.5"), hard_limit_usd=Decimal("1")),
        rates=(Decimal(1), Decimal(2)),
    )
    script = [tool_turn(i, 200, 100) for i in range(10)]  # 0.40 USD per turn
    runtime = AgentRuntime(provider=FakeProvider(script), budget=checker)
    result = await runtime.run("spend")
    assert result.status is RunState.STOPPED
    assert result.stop_reason is StopReason.TOKEN_BUDGET_EXCEEDED
    assert result.steps == 3  # 0.40, 0.80 (warning), 1.20 (over)
    events = await runtime.event_store.get_events(result.run_id)
    triggered = [e for e in events if e.event_type is EventType.POLICY_TRIGGERED]
    assert len(triggered) == 1 and triggered[0].payload["policy"] == "budget"
    assert triggered[0].payload["stop_reason"] == "token_budget_exceeded"
    assert checker.warned and checker.last is not None
    assert checker.last.spent_usd == Decimal("1.200000")
    assert events[-1].event_type is EventType.RUN_STOPPED


async def test_budget_under_the_limit_lets_the_run_complete():
    checker = BudgetChecker(
        BudgetConfig(hard_limit_usd=Decimal("10")), rates=(Decimal(1), Decimal(1))
    )
    script = [ModelResponse(content="ok", usage=TokenUsage(input_tokens=10, output_tokens=10))]
    result = await AgentRuntime(provider=FakeProvider(script), budget=checker).run("x")
    assert result.status is RunState.COMPLETED
    assert checker.last is not None and checker.last.spent_usd == Decimal("0.020000")


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def test_rate_limiter_is_awaited_before_every_model_call():
    time = FakeTime()
    limiter = RateLimiter(
        RateLimitConfig(requests_per_minute=2, tokens_per_minute=1000),
        clock=time.clock,
        sleep=time.sleep,
    )
    script = [tool_turn(0, 600, 1), tool_turn(1, 600, 1), ModelResponse(content="done")]
    result = await AgentRuntime(provider=FakeProvider(script), rate_limiter=limiter).run("x")
    assert result.status is RunState.COMPLETED
    # Call 1 (0 tokens known yet) and call 2 (600, the last call's input) use the
    # two-request burst; call 3 needs a request slot (30 s) and 200 more tokens (12 s):
    # it waits once, for the longer of the two.
    assert time.sleeps == [pytest.approx(30.0)]
    assert limiter.waited_seconds == pytest.approx(30.0)
