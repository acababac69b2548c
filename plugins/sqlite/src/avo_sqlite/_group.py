"""Group commit: one commit makes the writes of many runs durable at once.

Writes stage their rows into the connection's open transaction and leave it
open (see ``_txn``). A write that must be durable before its caller goes on
(a tool start or result, a new run, a terminal event, a lease: a *barrier*)
then waits here for the transaction it landed in to commit:

- While one run writes alone, it commits at once, as if there were no group.
- While several runs write, the first waiter schedules the commit for the
  end of the event loop's current round (``call_soon``). Every run that gets
  to write in that round joins the same transaction, and the one commit makes
  all of their batches durable; each caller returns only then.
- With ``synchronous`` OFF or NORMAL a commit does not fsync, so a run
  writing alone commits on the event loop thread (a thread hop would cost it
  more than the commit). A group's commit runs on the worker thread: it writes
  the round's pages to the WAL with the GIL released, while the runs that did
  not write in that round go on with their steps on the loop thread. With FULL
  (or EXTRA) every commit runs on the worker thread. Writes that arrive while
  a commit is in flight wait for it and then open the next transaction, which
  the next commit makes durable: the commit (and its fsync) is shared.

Effect-free writes are acknowledged at once and ride the next commit, at
the latest ``commit_delay`` seconds later (the worker thread commits them
then, see ``later``). If a commit fails,
every write that waits on it gets the error, and nothing of that transaction
is stored; a write that fails on its own is rolled back to its savepoint and
fails alone.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from avo_sqlite._core import SQLiteCore
    from avo_sqlite._worker import Worker


def cancel_again() -> None:
    """Re-deliver a cancellation caught inside a store call at the caller's next await.

    A store call is atomic for its caller: when the task is cancelled while a
    write is in flight (or just done), the call still returns what was stored
    and the task is cancelled again, keeping its cancellation count unchanged.
    """
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
        task.cancel()


class GroupCommit:
    """Commits the store's open transaction once for every write waiting on it."""

    def __init__(self, core: SQLiteCore, worker: Worker) -> None:
        self._core = core
        self._worker = worker
        self._waiting: dict[int, list[asyncio.Future[None]]] = {}  # transaction -> waiters
        self._soon: dict[int, asyncio.Handle] = {}  # transaction -> its commit, this round
        self.in_flight: asyncio.Future[Any] | None = None  # a commit on the worker thread
        self._last_run: str | None = None

    # ------------------------------------------------------------------ waiting
    async def durable(self, gen: int, grouped: bool) -> None:
        """Return once transaction ``gen`` (holding this caller's write) is committed.

        ``grouped``: other runs are writing too (:meth:`grouping`), so the commit
        waits for the end of the round. Raises the commit's StorageError if it
        failed (nothing of it was stored).
        """
        core = self._core
        if core.committed_gen < gen:
            if not grouped and self.in_flight is None and gen not in self._soon:
                self._commit(gen)  # alone: commit now (inline when it cannot block)
            if core.committed_gen < gen:
                await self._settled(gen)
        error = core.failed.get(gen)
        if error is not None:
            raise error

    async def _settled(self, gen: int) -> None:
        """Wait until transaction ``gen`` is settled (each waiter has its own future)."""
        loop = asyncio.get_running_loop()
        if gen not in self._soon and gen not in self._waiting:  # commit at the end of the round
            self._soon[gen] = loop.call_soon(self._commit, gen, False)
        cancelled = False
        while self._core.committed_gen < gen:
            future: asyncio.Future[None] = loop.create_future()
            self._waiting.setdefault(gen, []).append(future)
            try:
                await future
            except asyncio.CancelledError:
                # The write is staged and is committed (or fails) with its group: wait
                # for that outcome, and deliver the cancellation at the next await.
                cancelled = True
        if cancelled:
            cancel_again()

    def later(self) -> None:
        """An effect-free write left the transaction open: the worker commits it when due.

        The worker thread, not an event loop timer, so that a caller blocking the
        loop (a synchronous side store writing the same file) cannot stop it.
        """
        if self._worker.idle:
            self._worker.wake()

    async def landed(self) -> None:
        """Return once no commit is in flight (its done callback, which clears it, has run).

        A finished commit stays ``in_flight`` until that callback runs on the loop;
        awaiting the finished future does not yield, so it is given a turn instead
        (awaiting it in a loop would spin forever without letting the callback run).
        """
        while self.in_flight is not None:
            flight = self.in_flight
            if flight.done():
                await asyncio.sleep(0)
                continue
            with contextlib.suppress(Exception):  # the commit's waiters get its outcome
                await asyncio.shield(flight)

    async def commit_now(self) -> None:
        """Commit the open transaction (if any) and wait for it: ``store.flush()``."""
        core = self._core
        await self.landed()
        gen = core.txn_gen
        if core.committed_gen < gen:
            self._commit(gen)
            if core.committed_gen < gen:
                await self._settled(gen)
        error = core.failed.get(gen)
        if error is not None:
            raise error

    def grouping(self, run_id: str) -> bool:
        """True while more than one run writes: the last write was another run's.

        Then a commit waits for the round's writes; one run writing alone
        commits at once. (A count, not a clock: a slow machine must not split
        groups.)
        """
        grouping = self._last_run is not None and run_id != self._last_run
        self._last_run = run_id
        return grouping

    # ------------------------------------------------------------------ committing
    def _commit(self, gen: int, inline: bool = True) -> None:
        """Commit transaction ``gen`` now: on this thread if it cannot block, else on the worker.

        ``inline`` False (a group's commit at the end of a round): on the worker
        thread even when the commit cannot block, so that its C work overlaps
        the loop thread's Python.
        """
        handle = self._soon.pop(gen, None)
        if handle is not None:
            handle.cancel()
        core = self._core
        if core.committed_gen >= gen:
            self._settle()
            return
        if self.in_flight is not None:  # the worker commits an older transaction first
            self.in_flight.add_done_callback(lambda _: self._commit(gen))
            return
        if inline and core.inline_commits and core.lock.acquire(blocking=False):
            try:
                with contextlib.suppress(Exception):  # recorded in core.failed for the waiters
                    core.flush()
            finally:
                core.lock.release()
            if self._worker.idle and core.wal_dirty:
                self._worker.wake()
            self._settle()
            return
        flight = asyncio.wrap_future(self._worker.submit(core.flush))
        self.in_flight = flight

        def done(finished: asyncio.Future[Any]) -> None:
            self.in_flight = None
            if not finished.cancelled():
                finished.exception()  # recorded in core.failed; retrieved here
            self._settle()

        flight.add_done_callback(done)

    def _settle(self) -> None:
        """Wake the waiters of every transaction settled so far (committed or failed)."""
        settled = self._core.committed_gen
        for gen in [g for g in self._waiting if g <= settled]:
            for future in self._waiting.pop(gen):
                if not future.done():
                    future.set_result(None)


__all__ = ["GroupCommit", "cancel_again"]
