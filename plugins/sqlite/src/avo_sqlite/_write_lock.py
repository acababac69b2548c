"""Waiting for SQLite's write lock: short random pauses instead of SQLite's busy handler."""

from __future__ import annotations

import random
import sqlite3
import time

_jitter = random.Random().uniform


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED (another connection holds a lock)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (5, 6) or "locked" in str(exc) or "busy" in str(exc)


def wait_for_write_lock(conn: sqlite3.Connection, timeout: float) -> None:
    """``BEGIN IMMEDIATE``, retried after short random pauses until ``timeout`` seconds.

    Call it with the connection's busy timeout at 0. SQLite's own busy handler
    retries on a fixed schedule that settles at one try every 100 ms: against
    a writer that holds the lock on a steady rhythm (30 ms of every 100, say)
    its tries can fall into the locked part of every cycle for seconds on end.
    Pauses of a random 0.5-5 ms cannot stay in step with any rhythm, and catch
    a free lock within a few ms of its release.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(_jitter(0.0005, 0.005))


__all__ = ["is_busy", "wait_for_write_lock"]
