"""Retry policy and call_with_retry."""

from __future__ import annotations

import asyncio

import pytest

from avo.exceptions import AvoError, ConfigError, ProviderError
from avo.retry import RetryPolicy, call_with_retry, is_transient_error


class Flaky:
    """Fails with the given errors in order, then returns ``result``."""

    def __init__(self, errors: list[BaseException], result: str = "ok") -> None:
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def test_defaults() -> None:
    policy = RetryPolicy()
    assert (policy.max_attempts, policy.initial_delay, policy.max_delay) == (3, 0.5, 8.0)
    assert (policy.jitter, policy.multiplier) == (0.1, 2.0)
    with pytest.raises(AttributeError):
        policy.max_attempts = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be >= 1, got 0"),
        ({"initial_delay": -1}, "initial_delay must be >= 0, got -1"),
        ({"max_delay": -0.5}, "max_delay must be >= 0, got -0.5"),
        ({"jitter": 1.5}, "jitter must be between 0 and 1, got 1.5"),
        ({"multiplier": 0.5}, "multiplier must be >= 1, got 0.5"),
    ],
)
def test_bad_policy_is_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, AvoError)
    assert isinstance(info.value, ValueError)


def test_backoff_is_exponential_and_capped() -> None:
    policy = RetryPolicy(initial_delay=0.5, max_delay=3.0, jitter=0, multiplier=2)
    assert [policy.delay_for(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_bounds() -> None:
    policy = RetryPolicy(initial_delay=1.0, max_delay=8.0, jitter=0.1)
    assert policy.delay_for(1, rand=lambda: 0.0) == pytest.approx(0.9)
    assert policy.delay_for(1, rand=lambda: 0.5) == pytest.approx(1.0)
    assert policy.delay_for(1, rand=lambda: 0.999999) == pytest.approx(1.1, rel=1e-5)
    # jitter never pushes past max_delay
    assert policy.delay_for(10, rand=lambda: 0.999) == 8.0
    for _ in range(200):
        assert 0.9 <= policy.delay_for(1) <= 1.1


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (OSError("disk"), True),
        (ProviderError("503"), True),
        (ProviderError("bad key", retryable=False), False),
        (ValueError("bug"), False),
        (KeyError("x"), False),
    ],
)
def test_is_transient_error(exc: BaseException, expected: bool) -> None:
    assert is_transient_error(exc) is expected


async def test_retries_transient_errors_then_succeeds() -> None:
    flaky = Flaky([ConnectionError("reset"), TimeoutError()])
    sleeps = Sleeps()
    policy = RetryPolicy(max_attempts=3, initial_delay=0.25, jitter=0)
    assert await call_with_retry(flaky, policy=policy, sleep=sleeps) == "ok"
    assert flaky.calls == 3
    assert sleeps.delays == [0.25, 0.5]


async def test_gives_up_after_max_attempts_with_last_error() -> None:
    last = ConnectionError("third")
    flaky = Flaky([ConnectionError("first"), ConnectionError("second"), last])
    sleeps = Sleeps()
    with pytest.raises(ConnectionError) as info:
        await call_with_retry(flaky, policy=RetryPolicy(jitter=0), sleep=sleeps)
    assert info.value is last
    assert flaky.calls == 3
    assert len(sleeps.delays) == 2


async def test_non_retryable_error_is_raised_at_once() -> None:
    flaky = Flaky([ProviderError("bad request", retryable=False)])
    sleeps = Sleeps()
    with pytest.raises(ProviderError, match="bad request"):
        await call_with_retry(flaky, sleep=sleeps)
    assert flaky.calls == 1
    assert sleeps.delays == []


async def test_custom_retry_on() -> None:
    flaky = Flaky([ValueError("retry me")])
    sleeps = Sleeps()
    result = await call_with_retry(
        flaky, retry_on=lambda exc: isinstance(exc, ValueError), sleep=sleeps
    )
    assert result == "ok"
    assert flaky.calls == 2


async def test_single_attempt_policy_never_sleeps() -> None:
    flaky = Flaky([ConnectionError()])
    sleeps = Sleeps()
    with pytest.raises(ConnectionError):
        await call_with_retry(flaky, policy=RetryPolicy(max_attempts=1), sleep=sleeps)
    assert sleeps.delays == []


async def test_cancellation_is_not_retried() -> None:
    flaky = Flaky([asyncio.CancelledError()])
    sleeps = Sleeps()
    with pytest.raises(asyncio.CancelledError):
        await call_with_retry(flaky, sleep=sleeps)
    assert flaky.calls == 1


async def test_default_sleep_is_real_asyncio_sleep() -> None:
    flaky = Flaky([ConnectionError()])
    policy = RetryPolicy(initial_delay=0, jitter=0)
    assert await call_with_retry(flaky, policy=policy) == "ok"
    assert flaky.calls == 2
