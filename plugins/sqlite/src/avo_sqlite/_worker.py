"""The store's worker thread: the SQLite calls that would block, late commits, WAL checkpoints.

Calls that can run without waiting run on the event loop thread (see
``SQLiteEventStore._call``); the worker gets the rest: waiting for another
connection's write lock, and commits that fsync (``synchronous="FULL"``). It
also commits effect-free writes ``commit_delay`` seconds after their
transaction began, if nothing committed them sooner: a thread, not an event
loop timer, so a caller that blocks the loop cannot hold the write lock open.
WAL checkpoints (which copy the log back into the database and fsync it) run
here too, on the worker's own connection, so they never hold the store's
connection and never make the event loop thread wait.
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from avo_sqlite._core import SQLiteCore

_STOP = object()
_WAKE = object()
WAL_CHECKPOINT_INTERVAL = 0.5
"""Seconds between WAL checkpoints while the store is writing."""


class Worker:
    """One thread serving one :class:`SQLiteCore`: queued calls in order, and WAL checkpoints.

    The core says when a transaction is open (``pending_since``) and when its
    WAL grew (``wal_dirty``): the thread commits the first when it is due and
    checkpoints at most every :data:`WAL_CHECKPOINT_INTERVAL` seconds. While it
    has nothing to do it blocks without a timeout (``idle``), and the loop
    thread wakes it (:meth:`wake`).
    """

    def __init__(self, make_core: Callable[[], SQLiteCore]) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ready: Future[SQLiteCore] = Future()
        self.idle = False
        self._next_checkpoint = 0.0
        self._checkpointer: sqlite3.Connection | None = None
        self._thread = threading.Thread(
            target=self._main, args=(make_core,), name="avo-sqlite", daemon=True
        )
        self._thread.start()
        self.core = self._ready.result()  # re-raises the open error (StorageError)
        atexit.register(self.stop)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Queue ``fn(*args)`` for the worker thread (run holding the core's lock)."""
        future: Future[Any] = Future()
        self._queue.put((fn, args, future))
        return future

    def wake(self) -> None:
        """Make the thread look at the WAL again (after a commit on another thread)."""
        self._queue.put(_WAKE)

    def stop(self) -> None:
        """Commit, close the connections and end the thread (idempotent)."""
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
            # Announce idleness first: a commit after this line wakes us, one before
            # it is seen by the check below.
            self.idle = True
            now = time.monotonic()
            timeout: float | None = None
            if core.wal_dirty:
                timeout = max(0.0, self._next_checkpoint - now)
            pending = core.pending_since
            if pending is not None and core.acked:
                due = max(0.0, pending + core.commit_delay - now)
                timeout = due if timeout is None else min(timeout, due)
            self.idle = timeout is None
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                self._housekeeping(core)
                continue
            if item is _WAKE:
                continue
            if item is _STOP:
                self._close_checkpointer()
                with core.lock, contextlib.suppress(Exception):  # commit errors were reported
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

    def _housekeeping(self, core: SQLiteCore) -> None:
        """Commit a transaction whose ``commit_delay`` passed; checkpoint the WAL when due."""
        pending = core.pending_since
        # Only for acknowledged effect-free writes: a transaction of writes that wait
        # for their commit is committed by the group on the loop thread.
        if core.acked and pending is not None and time.monotonic() - pending >= core.commit_delay:
            with core.lock, contextlib.suppress(Exception):  # recorded for its waiters
                pending = core.pending_since
                if pending is not None and time.monotonic() - pending >= core.commit_delay:
                    core.flush()
        self._checkpoint_wal(core)

    def _checkpoint_wal(self, core: SQLiteCore) -> None:
        """Copy committed WAL frames back into the database (PASSIVE: never waits for writers)."""
        now = time.monotonic()
        if not core.wal_dirty or now < self._next_checkpoint:
            return
        core.wal_dirty = False
        self._next_checkpoint = now + WAL_CHECKPOINT_INTERVAL
        try:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(
                    core.path, isolation_level=None, check_same_thread=False
                )
            self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            # Best effort: the next checkpoint (or the last connection's close) catches up.
            self._close_checkpointer()

    def _close_checkpointer(self) -> None:
        if self._checkpointer is not None:
            with contextlib.suppress(sqlite3.Error):
                self._checkpointer.close()
            self._checkpointer = None
