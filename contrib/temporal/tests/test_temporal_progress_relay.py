"""The worker side of tool progress (avo_temporal.progress.ProgressRelay), without a server.

The relay sends a call's updates in order, throttled as the kernel's recorder
is, takes reports from a tool's own thread, and never lets the call's end wait
for long on a server that stopped answering (progress is a note).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from avo_temporal import progress
from avo_temporal.progress import ProgressRelay


class _Handle:
    """A workflow handle that records signals (or never answers, when ``stuck``)."""

    def __init__(self, stuck: bool = False) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.stuck = stuck

    async def signal(self, name: str, payload: dict[str, Any]) -> None:
        if self.stuck:
            await asyncio.Event().wait()
        self.sent.append((name, payload))


async def test_a_flood_sends_the_first_and_the_newest_in_order() -> None:
    handle = _Handle()
    relay = ProgressRelay(handle, "c1", 2, interval=3600.0)
    for step in range(1, 1001):
        relay(step, 1000, f"step {step}")
    await relay.close()
    assert [(name, p["progress"], p["message"]) for name, p in handle.sent] == [
        ("progress", 1.0, "step 1"),
        ("progress", 1000.0, "step 1000"),
    ]
    assert handle.sent[0][1] == {
        "tool_call_id": "c1",
        "dispatch": 2,
        "progress": 1.0,
        "total": 1000.0,
        "message": "step 1",
    }


async def test_reports_from_the_tools_thread_reach_the_loop() -> None:
    handle = _Handle()
    relay = ProgressRelay(handle, "c1", 1, interval=0.0)

    def tool() -> None:
        for step in (1, 2, 3):
            relay(step, 3, None)

    await asyncio.to_thread(tool)
    await asyncio.sleep(0)  # the thread's reports are handed to the loop
    await relay.close()
    assert [p["progress"] for _, p in handle.sent] == [1.0, 2.0, 3.0]


async def test_the_end_of_a_call_does_not_wait_on_a_silent_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress, "CLOSE_SECONDS", 0.01)
    relay = ProgressRelay(_Handle(stuck=True), "c1", 1)
    relay(1, 2, "first")
    await asyncio.wait_for(relay.close(), 60)  # returns: the unsent note is dropped
    assert relay.closed
