"""avo._deadline.within keeps asyncio.timeout's contract."""

from __future__ import annotations

import asyncio

import pytest

from avo._deadline import within


async def _sleep(seconds: float, value: str = "done") -> str:
    await asyncio.sleep(seconds)
    return value


async def test_in_time_returns_the_value_and_leaves_no_cancel() -> None:
    assert await within(5, _sleep(0)) == "done"
    assert await within(None, _sleep(0, "x")) == "x"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_late_raises_timeout_and_restores_the_cancel_count() -> None:
    with pytest.raises(TimeoutError):
        await within(0.01, _sleep(5))
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    assert await within(5, _sleep(0)) == "done"  # the task is usable afterwards


async def test_an_outside_cancel_stays_a_cancel() -> None:
    async def runner() -> str:
        return await within(5, _sleep(5))

    task = asyncio.create_task(runner())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_swallowed_expiry_still_returns_and_uncancels() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "kept going"
        return "slept"

    assert await within(0.01, stubborn()) == "kept going"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_an_awaitable_that_never_suspends_arms_no_timer() -> None:
    async def at_once() -> str:
        return "now"

    loop = asyncio.get_running_loop()
    calls: list[float] = []
    original = loop.call_at

    def counting(when: float, callback, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(when)
        return original(when, callback, *args, **kwargs)

    loop.call_at = counting  # type: ignore[method-assign]
    try:
        assert await within(5, at_once()) == "now"
        assert calls == []
        assert await within(5, _sleep(0)) == "done"  # suspends once: one timer
        assert len(calls) == 1
    finally:
        del loop.call_at


async def test_the_deadline_counts_from_the_start_not_the_first_suspension() -> None:
    import time

    async def busy_then_waits() -> str:
        time.sleep(0.05)  # a synchronous first part (no timer can fire during it)
        await asyncio.sleep(0.05)
        return "late"

    with pytest.raises(TimeoutError):
        await within(0.06, busy_then_waits())  # 0.05 s busy + 0.05 s wait > 0.06 s


async def test_an_error_before_the_first_suspension_propagates_unchanged() -> None:
    async def fails() -> str:
        raise ValueError("bad argument")

    with pytest.raises(ValueError, match="bad argument"):
        await within(5, fails())
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_values_and_cancellations_reach_the_suspended_awaitable() -> None:
    seen: list[str] = []

    async def waits_twice() -> str:
        value = await asyncio.sleep(0, "first")
        seen.append(value)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "unreachable"

    with pytest.raises(TimeoutError):
        await within(0.02, waits_twice())
    assert seen == ["first", "cancelled"]


async def test_a_future_can_be_awaited_within_a_deadline() -> None:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    loop.call_later(0.01, future.set_result, "set")
    assert await within(5, future) == "set"
    pending: asyncio.Future[str] = loop.create_future()
    with pytest.raises(TimeoutError):
        await within(0.01, pending)
    assert pending.cancelled()


async def test_closing_the_waiting_coroutine_closes_the_awaitable() -> None:
    closed: list[bool] = []

    async def waits() -> str:
        try:
            await asyncio.sleep(5)
        finally:
            closed.append(True)
        return "never"

    outer = within(5, waits())
    outer.send(None)  # runs up to the sleep's suspension
    outer.close()
    assert closed == [True]
