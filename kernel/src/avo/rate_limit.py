"""Token-bucket rate limiting for model calls: requests and tokens per minute.

Give a runtime ``AgentRuntime(rate_limiter=RateLimiter(RateLimitConfig(...)))``
and it awaits :meth:`RateLimiter.acquire` before every model call. Both buckets
start full and refill continuously; ``acquire`` sleeps until both hold enough,
and raises :class:`RateLimitError` when the request can never fit (asking for
more tokens than the per-minute capacity would starve forever).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from avo.exceptions import AvoError

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class RateLimitError(AvoError):
    """A rate-limited call can never proceed (or the config is invalid)."""


@dataclass
class RateLimitConfig:
    """Per-minute limits; ``None`` means unlimited."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise RateLimitError(
                    f"RateLimitConfig.{name} must be a positive integer or None, got {value!r}"
                )


class _Bucket:
    """One token bucket holding at most ``capacity``, refilling ``capacity`` per minute."""

    def __init__(self, capacity: int, now: float) -> None:
        self.capacity = float(capacity)
        self.level = float(capacity)
        self.rate = capacity / 60.0
        self.updated = now

    def refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.updated)
        self.level = min(self.capacity, self.level + elapsed * self.rate)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 when it already is)."""
        missing = amount - self.level
        return 0.0 if missing <= 0 else missing / self.rate


class RateLimiter:
    """Token bucket over requests per minute and input tokens per minute.

    ``clock`` (monotonic seconds) and ``sleep`` are injectable so tests drive
    time by hand. Concurrent callers are served one at a time, in order.
    """

    def __init__(
        self,
        config: RateLimitConfig | None = None,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config or RateLimitConfig()
        self._clock = clock
        self._sleep = sleep
        now = clock()
        rpm, tpm = self.config.requests_per_minute, self.config.tokens_per_minute
        self._requests = _Bucket(rpm, now) if rpm is not None else None
        self._tokens = _Bucket(tpm, now) if tpm is not None else None
        self._lock = asyncio.Lock()
        self.waited_seconds = 0.0
        """Total time ``acquire`` spent sleeping (useful for metrics)."""

    async def acquire(self, *, input_tokens: int = 0) -> None:
        """Wait until one request carrying ``input_tokens`` may proceed, then take it."""
        if input_tokens < 0:
            raise RateLimitError(f"input_tokens must be >= 0, got {input_tokens}")
        if self._tokens is not None and input_tokens > self._tokens.capacity:
            raise RateLimitError(
                f"a request of {input_tokens} input tokens can never fit under "
                f"tokens_per_minute={int(self._tokens.capacity)}; raise the limit or "
                "send a smaller request"
            )
        async with self._lock:
            while True:
                now = self._clock()
                wait = 0.0
                if self._requests is not None:
                    self._requests.refill(now)
                    wait = max(wait, self._requests.wait_for(1))
                if self._tokens is not None:
                    self._tokens.refill(now)
                    wait = max(wait, self._tokens.wait_for(input_tokens))
                if wait <= 0:
                    if self._requests is not None:
                        self._requests.level -= 1
                    if self._tokens is not None:
                        self._tokens.level -= input_tokens
                    return
                self.waited_seconds += wait
                await self._sleep(wait)

    def available(self) -> tuple[float | None, float | None]:
        """Current (requests, tokens) in the buckets; ``None`` for an unlimited one."""
        now = self._clock()
        levels: list[float | None] = []
        for bucket in (self._requests, self._tokens):
            if bucket is None:
                levels.append(None)
            else:
                bucket.refill(now)
                levels.append(bucket.level)
        return levels[0], levels[1]


def rate_limiter_from_settings(settings: Mapping[str, object] | None) -> RateLimiter | None:
    """A limiter from an ``avo.toml`` ``[rate_limit]`` table, or None when it sets no limit.

    Keys: ``requests_per_minute``, ``tokens_per_minute`` (positive integers).
    """
    table = dict(settings or {})
    allowed = ("requests_per_minute", "tokens_per_minute")
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise RateLimitError(f"unknown [rate_limit] keys {unknown}; allowed: {', '.join(allowed)}")
    rpm, tpm = table.get("requests_per_minute"), table.get("tokens_per_minute")
    if rpm is None and tpm is None:
        return None
    return RateLimiter(RateLimitConfig(requests_per_minute=rpm, tokens_per_minute=tpm))  # type: ignore[arg-type]


__all__ = ["RateLimitConfig", "RateLimitError", "RateLimiter", "rate_limiter_from_settings"]
