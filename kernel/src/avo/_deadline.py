"""``within(seconds, awaitable)``: asyncio.timeout's semantics at a fraction of its cost.

The run loop bounds two awaits a step (the provider and the tool). This keeps
``asyncio.timeout``'s contract — the awaiting task is cancelled at the
deadline, the cancellation becomes ``TimeoutError`` unless someone else also
cancelled the task, and the task's cancel count is restored — with one timer
handle and no state object.

The deadline can only fire while the awaitable is suspended (a timer runs
between event-loop rounds), so the awaitable is first run up to its first
suspension before any timer exists: one that finishes without suspending (an
in-process tool, a scripted model, a cache hit) costs no timer at all. One
that suspends gets its timer then, due at the start time plus ``seconds``, so
the deadline is the same as if it had been armed first.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Generator
from typing import Any, TypeVar, cast

T = TypeVar("T")


@types.coroutine
def _resume(inner: Generator[Any, Any, T], yielded: Any) -> Generator[Any, Any, T]:
    """``yield from inner`` for an iterator that already yielded ``yielded``.

    Passes what the task sends or throws (a cancellation) on to ``inner``, and
    closes ``inner`` when this generator is closed, as ``yield from`` does.
    """
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            inner.close()
            raise
        except BaseException as exc:  # a cancellation (or any throw): inner decides
            try:
                yielded = inner.throw(exc)
            except StopIteration as done:
                return cast(T, done.value)
        else:
            try:
                yielded = inner.send(sent)
            except StopIteration as done:
                return cast(T, done.value)


async def within(seconds: float | None, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable``; raise TimeoutError if it takes longer than ``seconds``."""
    if seconds is None:
        return await awaitable
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - the run loop always runs in a task
        raise RuntimeError("within() must be used inside a task")
    cancelling = task.cancelling()
    inner = awaitable.__await__()
    try:
        yielded = inner.send(None)
    except StopIteration as done:  # finished without suspending: no deadline could pass
        return cast(T, done.value)
    fired = False

    def expire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    handle = loop.call_at(deadline, expire)
    try:
        result = await _resume(inner, yielded)
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
