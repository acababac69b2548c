"""The kernel side of a chat: one thread with its own event loop makes every kernel call.

The terminal (prompt_toolkit) owns the main thread's loop; the runtime, the
event store and the slash commands live on this thread's loop. Nothing the
agent does (a blocking tool, a slow store write, rendering of a long answer)
can stall the keyboard, and nothing typed can stall a run. The two sides talk
only through :meth:`Driver.submit` (run a coroutine here) and the screen's
thread-safe methods (show something there).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Driver:
    """A daemon thread running an asyncio loop for the kernel calls of one chat."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="avo-chat-kernel", daemon=True)
        self._started = False

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> Driver:
        """Start the thread (once)."""
        if not self._started:
            self._started = True
            self._thread.start()
        return self

    @property
    def on_kernel_thread(self) -> bool:
        """True when called from the kernel thread."""
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the kernel loop; returns a thread-safe future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the kernel loop from another event loop."""
        return await asyncio.wrap_future(self.submit(coro))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Block this (non-kernel) thread until ``coro`` finished on the kernel loop."""
        return self.submit(coro).result()

    def call_soon(self, function: Callable[..., Any], *args: Any) -> None:
        """Call ``function(*args)`` on the kernel loop (thread-safe)."""
        self.loop.call_soon_threadsafe(function, *args)

    def stop(self, timeout: float = 5.0) -> None:
        """Cancel what still runs on the kernel loop, then stop the thread."""
        if not self._started or self.loop.is_closed():
            return

        async def _cancel_all() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            self.submit(_cancel_all()).result(timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)


__all__ = ["Driver"]
