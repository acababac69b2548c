"""Retry with capped exponential backoff and jitter.

``call_with_retry`` calls ``factory()`` (a zero-argument callable returning an
awaitable) until it succeeds, the error is not retryable, or
``policy.max_attempts`` calls were made; the last error is then re-raised
unchanged. The wait before retry ``n`` (1-based) is
``min(max_delay, initial_delay * multiplier ** (n - 1))`` scaled by a random
factor in ``[1 - jitter, 1 + jitter]`` (capped at ``max_delay`` again) —
unless the error carries the server's ``retry_after`` (seconds, from an HTTP
``Retry-After``) no longer than ``max_retry_after``: then exactly that.
``sleep`` is injectable so tests and simulations never wait.
Cancellation (``asyncio.CancelledError``) is never retried.

The run loop retries every provider call with the ``RetryPolicy`` of its
``LoopPolicy.retry`` (see ``avo.runtime_handlers``), recording each retry.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from avo.exceptions import ConfigError, ProviderError

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[object]]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a transient failure."""

    max_attempts: int = 3
    initial_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.1
    multiplier: float = 2.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(
                f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}; "
                "use 1 to disable retries",
                key="max_attempts",
            )
        for name in ("initial_delay", "max_delay", "max_retry_after"):
            value = getattr(self, name)
            if value < 0:
                raise ConfigError(f"RetryPolicy.{name} must be >= 0, got {value}", key=name)
        if not 0 <= self.jitter <= 1:
            raise ConfigError(
                f"RetryPolicy.jitter must be between 0 and 1, got {self.jitter}", key="jitter"
            )
        if self.multiplier < 1:
            raise ConfigError(
                f"RetryPolicy.multiplier must be >= 1, got {self.multiplier}", key="multiplier"
            )

    def delay_for(self, retry: int, *, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``retry`` (1-based).

        ``rand`` returns a float in ``[0, 1)``; it only shapes the jitter.
        """
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (retry - 1))
        if self.jitter:
            base *= 1 + self.jitter * (2 * rand() - 1)
        return max(0.0, min(self.max_delay, base))

    def wait_before(
        self,
        retry: int,
        retry_after: float | None = None,
        *,
        rand: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to wait before retry ``retry``: the server's ``retry_after`` when it
        gave one no longer than ``max_retry_after``, else the backoff (``delay_for``).

        A server asking for more than ``max_retry_after`` is not followed (a quota
        reset hours away); the backoff applies, as the vendors' own SDKs do.
        """
        if retry_after is not None and 0 <= retry_after <= self.max_retry_after:
            return float(retry_after)
        return self.delay_for(retry, rand=rand)


def is_transient_error(exc: BaseException) -> bool:
    """True for errors worth retrying: connection, timeout and OS errors.

    A :class:`~avo.exceptions.ProviderError` is transient exactly when it says
    so (``retryable=True``).
    """
    if isinstance(exc, ProviderError):
        return exc.retryable
    return isinstance(exc, ConnectionError | TimeoutError | OSError)


def retry_after_of(exc: BaseException) -> float | None:
    """The seconds a failed call's server asked to wait (``exc.retry_after``), if any."""
    value = getattr(exc, "retry_after", None)
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


async def call_with_retry(
    factory: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy | None = None,
    retry_on: Callable[[BaseException], bool] = is_transient_error,
    sleep: Sleep = asyncio.sleep,
    on_retry: Callable[[int, BaseException, float], object] | None = None,
) -> T:
    """Await ``factory()``, retrying errors ``retry_on`` accepts; return its result.

    ``on_retry(attempt, error, delay)`` (optional) hears of each failed attempt
    that will be retried, before the wait.
    """
    policy = policy or RetryPolicy()
    attempt = 1
    while True:
        try:
            return await factory()
        except Exception as exc:
            if attempt >= policy.max_attempts or not retry_on(exc):
                raise
            delay = policy.wait_before(attempt, retry_after_of(exc))
            if on_retry is not None:
                on_retry(attempt, exc, delay)
        await sleep(delay)
        attempt += 1


__all__ = ["RetryPolicy", "call_with_retry", "is_transient_error", "retry_after_of"]
