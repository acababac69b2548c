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
