"""Circuit breaker for provider calls."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class CircuitState(StrEnum):
    """The breaker's position."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class BreakerOpen(Exception):
    """Raised by ``allow()`` while the breaker refuses calls."""

    def __init__(self, state: CircuitState, retry_after_seconds: float) -> None:
        super().__init__(
            f"circuit breaker is {state.value}; retry after {retry_after_seconds:.1f}s"
        )
        self.state = state
        self.retry_after_seconds = retry_after_seconds


@dataclass(frozen=True)
class CircuitBreakerPolicy:
    """When the breaker opens and how it recovers."""

    failure_threshold: int = 5
    cooldown_seconds: float = 30.0
    half_open_max_calls: int = 1

    def __post_init__(self) -> None:
        if self.failure_threshold < 1:
            raise ValueError(f"failure_threshold must be >= 1, got {self.failure_threshold}")
        if self.cooldown_seconds <= 0:
            raise ValueError(f"cooldown_seconds must be > 0, got {self.cooldown_seconds}")
        if self.half_open_max_calls < 1:
            raise ValueError(f"half_open_max_calls must be >= 1, got {self.half_open_max_calls}")


class CircuitBreaker:
    """Opens after ``failure_threshold`` consecutive failures; half-opens after the cooldown."""

    def __init__(
        self, policy: CircuitBreakerPolicy, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._policy = policy
        self._clock = clock
        self._state = CircuitState.CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._half_open_calls = 0

    @property
    def state(self) -> CircuitState:
        """Current state, moving OPEN -> HALF_OPEN once the cooldown elapsed."""
        if (
            self._state is CircuitState.OPEN
            and self._clock() - self._opened_at >= self._policy.cooldown_seconds
        ):
            self._state = CircuitState.HALF_OPEN
            self._half_open_calls = 0
        return self._state

    @property
    def consecutive_failures(self) -> int:
        """Failures since the last success."""
        return self._failures

    def allow(self) -> None:
        """Raise BreakerOpen unless a call may go through now."""
        state = self.state
        if state is CircuitState.OPEN:
            remaining = self._policy.cooldown_seconds - (self._clock() - self._opened_at)
            raise BreakerOpen(state, max(0.0, remaining))
        if state is CircuitState.HALF_OPEN:
            if self._half_open_calls >= self._policy.half_open_max_calls:
                raise BreakerOpen(state, 0.0)
            self._half_open_calls += 1

    def record_success(self) -> None:
        """Close the breaker."""
        self._state = CircuitState.CLOSED
        self._failures = 0
        self._half_open_calls = 0

    def record_failure(self) -> None:
        """Count a failure; open at the threshold or on a failed half-open probe."""
        self._failures += 1
        threshold = self._policy.failure_threshold
        if self._state is CircuitState.HALF_OPEN or self._failures >= threshold:
            self._state = CircuitState.OPEN
            self._opened_at = self._clock()

    def reset(self) -> None:
        """Forget all history."""
        self.record_success()


__all__ = ["BreakerOpen", "CircuitBreaker", "CircuitBreakerPolicy", "CircuitState"]
