"""The event stores this process has open, by file: so a side store never waits on its own process.

An event store may keep a write transaction open between event-loop rounds
(a group commit gathers several runs' batches, and only the loop thread ends
the round that commits them). A synchronous side store on the same file (the
token ledger, blobs, sessions) that is called *on that loop thread* would then
wait for a write lock its own process holds and can only release when the
wait is over: a deadlock that the busy timeout turns into ten-second stalls
per write. Before waiting, a side store asks the open event stores on its file
to commit now (:func:`commit_open_transactions`). Committing early is always
allowed: it makes writes durable sooner and wakes their waiters as before.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()
_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()
LOCK_WAIT_SECONDS = 0.05
"""How long to wait for an event store's connection before leaving it to its own commit."""


def register(core: Any) -> None:
    """Note an open event store core (a :class:`~avo_sqlite._core.SQLiteCore`)."""
    with _LOCK:
        _OPEN.add(core)


def unregister(core: Any) -> None:
    """Forget a core whose connection is closing."""
    with _LOCK:
        _OPEN.discard(core)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _in_transaction(core: Any) -> bool:
    try:
        return bool(core.conn.in_transaction)
    except Exception:  # a connection closed meanwhile
        return False


def commit_open_transactions(path: Path) -> None:
    """Commit every open write transaction this process's event stores hold on ``path``.

    A core busy on another thread (its worker writing) is left alone: that
    thread ends its own call and does not need this one.
    """
    with _LOCK:
        candidates = list(_OPEN)
    # (an unlocked peek: a core without an open transaction has nothing to commit, and
    # this runs on every side-store write, so files are compared only for the others)
    cores = [c for c in candidates if _in_transaction(c) and _same_file(c.path, path)]
    for core in cores:
        if not core.lock.acquire(timeout=LOCK_WAIT_SECONDS):
            continue
        try:
            # (a closed connection raises here; a failed commit is recorded for its waiters)
            with contextlib.suppress(Exception):
                if core.conn.in_transaction:
                    core.flush()
        finally:
            core.lock.release()


__all__ = ["commit_open_transactions", "register", "unregister"]
