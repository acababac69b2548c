"""``within(seconds, awaitable)``: asyncio.timeout's semantics at about half its cost.

The run loop bounds two awaits a step (the provider and the tool). This keeps
``asyncio.timeout``'s contract — the awaiting task is cancelled at the
deadline, the cancellation becomes ``TimeoutError`` unless someone else also
cancelled the task, and the task's cancel count is restored — with one timer
handle and no state object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(seconds: float | None, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable``; raise TimeoutError if it takes longer than ``seconds``."""
    if seconds is None:
        return await awaitable
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - the run loop always runs in a task
        raise RuntimeError("within() must be used inside a task")
    loop = asyncio.get_running_loop()
    cancelling = task.cancelling()
    fired = False

    def expire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    handle = loop.call_at(loop.time() + seconds, expire)
    try:
        result = await awaitable
    except asyncio.CancelledError as exc:
        if fired and task.uncancel() <= cancelling:
            raise TimeoutError from exc
        raise
    finally:
        handle.cancel()
    if fired:  # expired, but the awaitable swallowed the cancellation
        task.uncancel()
    return result


__all__ = ["within"]
