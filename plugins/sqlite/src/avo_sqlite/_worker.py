"""The store's single worker thread: runs every SQLite call and flushes group commits."""

from __future__ import annotations

import atexit
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from avo_sqlite._core import SQLiteCore

_STOP = object()
_WAKE = object()
ACTIVE_WINDOW = 1.0
"""Seconds after the last write during which the worker polls rather than sleeps."""
WAL_CHECKPOINT_INTERVAL = 0.5
"""Seconds between WAL checkpoints by the worker while the store is writing."""


class Worker:
    """One thread owning one :class:`SQLiteCore`; calls are queued and run in order.

    While the core holds buffered writes, the thread waits for the next call at
    most until ``commit_delay`` seconds after the buffer was opened, then commits.
    """

    def __init__(self, make_core: Callable[[], SQLiteCore]) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ready: Future[SQLiteCore] = Future()
        self._thread = threading.Thread(
            target=self._main, args=(make_core,), name="avo-sqlite", daemon=True
        )
        self._thread.start()
        self.core = self._ready.result()  # re-raises the open error (StorageError)
        atexit.register(self.stop)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Queue ``fn(*args)`` for the worker thread."""
        future: Future[Any] = Future()
        self._queue.put((fn, args, future))
        return future

    def wake(self) -> None:
        """Make the thread re-arm its timers (group-commit window, WAL checkpoint)."""
        self._queue.put(_WAKE)

    def stop(self) -> None:
        """Flush, close the connection and end the thread (idempotent)."""
        atexit.unregister(self.stop)
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    def _main(self, make_core: Callable[[], SQLiteCore]) -> None:
        try:
            core = make_core()
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._ready.set_result(core)
        while True:
            # Announce idleness first: a loop-thread write after this line wakes us, one
            # before it is seen by the checks below.
            core.worker_idle = True
            now = time.monotonic()
            timeout: float | None = None
            if now - core.last_write < ACTIVE_WINDOW:  # busy: poll instead of being woken
                timeout = max(core.commit_delay, 0.001)
            if core.wal_dirty:
                timeout = min(timeout or 1e9, max(0.0, core.next_wal_checkpoint - now))
            pending = core.pending_since
            if pending is not None:
                timeout = min(timeout or 1e9, max(0.0, pending + core.commit_delay - now))
            core.worker_idle = timeout is None
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                self._housekeeping(core)
                continue
            if item is _WAKE:
                continue
            if item is _STOP:
                with core.lock, contextlib.suppress(Exception):  # flush errors were reported
                    core.close()
                return
            fn, args, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                with core.lock:
                    result = fn(*args)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
            self._housekeeping(core)

    @staticmethod
    def _housekeeping(core: SQLiteCore) -> None:
        """Flush a group commit whose window passed; checkpoint the WAL when idle."""
        pending = core.pending_since
        due = pending is not None and time.monotonic() - pending >= core.commit_delay
        wal_due = core.wal_dirty and time.monotonic() >= core.next_wal_checkpoint
        if not due and (pending is not None or not wal_due):
            return  # nothing to do yet: leave the connection to the event loop thread
        with core.lock:
            pending = core.pending_since
            # A failed flush is kept by the core and raised on its next call.
            with contextlib.suppress(Exception):
                if pending is not None and time.monotonic() - pending >= core.commit_delay:
                    core.flush()
                if core.pending_since is None:
                    core.checkpoint_wal(WAL_CHECKPOINT_INTERVAL)
