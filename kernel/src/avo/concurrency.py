"""Cap how many runs (or calls) proceed at once.

``ConcurrencyLimiter(limit)`` is an async semaphore with a policy for the full
case: by default a caller over the limit fails fast with
:class:`ConcurrencyError`; with ``wait=True`` it queues (optionally for at most
``timeout`` seconds, then fails)::

    limiter = ConcurrencyLimiter(4)
    async with limiter.slot():
        await runtime.run(task)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from avo.exceptions import AvoError


class ConcurrencyError(AvoError):
    """The concurrency limit is reached (or a queued caller timed out)."""


class ConcurrencyLimiter:
    """At most ``limit`` holders at a time."""

    def __init__(self, limit: int, *, wait: bool = False, timeout: float | None = None) -> None:
        if not isinstance(limit, int) or limit < 1:
            raise ConcurrencyError(f"concurrency limit must be an integer >= 1, got {limit!r}")
        if timeout is not None and timeout <= 0:
            raise ConcurrencyError(f"timeout must be > 0 seconds or None, got {timeout!r}")
        self.limit = limit
        self.wait = wait
        self.timeout = timeout
        self._semaphore = asyncio.Semaphore(limit)
        self._active = 0

    @property
    def active(self) -> int:
        """How many holders are inside right now."""
        return self._active

    @property
    def available(self) -> int:
        """How many more holders may enter without waiting."""
        return self.limit - self._active

    async def acquire(self) -> None:
        """Take a slot, failing fast or waiting per the limiter's policy."""
        if not self.wait:
            if self._semaphore.locked():
                raise ConcurrencyError(
                    f"concurrency limit of {self.limit} reached; retry later or raise the limit"
                )
            await self._semaphore.acquire()
        elif self.timeout is None:
            await self._semaphore.acquire()
        else:
            try:
                await asyncio.wait_for(self._semaphore.acquire(), self.timeout)
            except TimeoutError:
                raise ConcurrencyError(
                    f"waited {self.timeout}s for one of {self.limit} concurrency slots"
                ) from None
        self._active += 1

    def release(self) -> None:
        """Give a slot back."""
        if self._active <= 0:
            raise ConcurrencyError("release() called more times than acquire()")
        self._active -= 1
        self._semaphore.release()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """``async with limiter.slot():`` holds one slot for the block."""
        await self.acquire()
        try:
            yield
        finally:
            self.release()


__all__ = ["ConcurrencyError", "ConcurrencyLimiter"]
