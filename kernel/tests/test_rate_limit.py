import asyncio

import pytest

from avo.exceptions import AvoError
from avo.rate_limit import RateLimitConfig, RateLimiter, RateLimitError


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def limiter(rpm=None, tpm=None):
    t = FakeTime()
    return t, RateLimiter(RateLimitConfig(rpm, tpm), clock=t.clock, sleep=t.sleep)


async def test_unlimited_never_waits():
    t, lim = limiter()
    for _ in range(100):
        await lim.acquire(input_tokens=10_000)
    assert t.sleeps == []


async def test_requests_per_minute_bucket_refills_continuously():
    t, lim = limiter(rpm=60)  # one per second after the burst
    for _ in range(60):
        await lim.acquire()
    assert t.sleeps == []
    await lim.acquire()
    assert t.sleeps == [pytest.approx(1.0)]
    t.now += 5  # five seconds idle refill five requests
    for _ in range(5):
        await lim.acquire()
    assert len(t.sleeps) == 1


async def test_tokens_per_minute_waits_for_enough_tokens():
    t, lim = limiter(tpm=600)  # 10 tokens / second
    await lim.acquire(input_tokens=500)
    await lim.acquire(input_tokens=300)  # 100 left, needs 200 more -> 20 s
    assert sum(t.sleeps) == pytest.approx(20.0)
    assert lim.waited_seconds == pytest.approx(20.0)


async def test_both_limits_take_the_longer_wait():
    t, lim = limiter(rpm=1, tpm=6000)
    await lim.acquire(input_tokens=10)
    await lim.acquire(input_tokens=10)
    assert sum(t.sleeps) == pytest.approx(60.0)


async def test_request_larger_than_capacity_raises_instead_of_starving():
    _, lim = limiter(tpm=100)
    with pytest.raises(RateLimitError, match="tokens_per_minute=100"):
        await lim.acquire(input_tokens=101)
    assert issubclass(RateLimitError, AvoError)


async def test_concurrent_callers_are_serialised_in_order():
    t, lim = limiter(rpm=60)
    order: list[int] = []

    async def call(i: int) -> None:
        await lim.acquire()
        order.append(i)

    for _ in range(60):
        await lim.acquire()
    await asyncio.gather(*(call(i) for i in range(3)))
    assert order == [0, 1, 2]
    assert sum(t.sleeps) == pytest.approx(3.0)


def test_invalid_config_names_the_field():
    with pytest.raises(RateLimitError, match="requests_per_minute"):
        RateLimitConfig(requests_per_minute=0)
    with pytest.raises(RateLimitError, match="tokens_per_minute"):
        RateLimitConfig(tokens_per_minute=-5)


async def test_negative_tokens_rejected_and_available_reports_levels():
    _, lim = limiter(rpm=10, tpm=None)
    with pytest.raises(RateLimitError):
        await lim.acquire(input_tokens=-1)
    await lim.acquire()
    requests, tokens = lim.available()
    assert requests == pytest.approx(9.0)
    assert tokens is None


def test_rate_limiter_from_settings():
    from avo.rate_limit import rate_limiter_from_settings

    assert rate_limiter_from_settings({}) is None
    limiter = rate_limiter_from_settings({"requests_per_minute": 30})
    assert limiter is not None and limiter.config.requests_per_minute == 30
    assert limiter.config.tokens_per_minute is None
    with pytest.raises(RateLimitError, match="allowed: requests_per_minute"):
        rate_limiter_from_settings({"rpm": 1})
    with pytest.raises(RateLimitError, match="positive integer"):
        rate_limiter_from_settings({"tokens_per_minute": "many"})
