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
  a commit is in flight do not wait for it when they can be staged without the
  connection (``_pipeline``): the loop thread validates and encodes them while
  the worker commits, and once that commit lands the worker inserts and
  commits them all (the next group); each caller returns once its own batch
  is committed. Other calls (reads, single writes, leases, a run's first
  batch here) wait for the connection; while one waits, the staged batches
  wait for it, so a steady stream of batches cannot keep it out.

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

from avo.events import AgentEvent

if TYPE_CHECKING:
    from avo_sqlite._core import SQLiteCore
    from avo_sqlite._pipeline import Piped
    from avo_sqlite._worker import Worker


class _Pipeline:
    """Batches staged while a commit was in flight, committed together next."""

    def __init__(self) -> None:
        self.batches: list[Piped] = []
        self.ripe = False  # the round it began in ended: commit it once the connection is free
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.error: BaseException | None = None  # what every batch of it gets


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
        self.pipeline: _Pipeline | None = None  # staged batches waiting for the connection
        self.conn_waiters = 0  # calls waiting for (or using) the connection
        self._window: set[str] = set()  # runs that wrote since one of them wrote twice
        self._writers = 0  # runs writing in turn: the size of the last such window
        self.staged = 0  # batches staged while the connection was busy, so far

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
            waiting = self._waiting.setdefault(gen, [])
            waiting.append(future)
            if len(waiting) >= self._split() and self.in_flight is None:
                # half the writers are in: commit them now, stage the others meanwhile
                self._commit(gen, False)
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

    async def pipelined(self, stored: list[AgentEvent], piped: Piped) -> list[AgentEvent]:
        """Queue a staged batch for the next commit; return ``stored`` once it is durable.

        Raises the StorageError of its commit, or its own if it was refused
        alone. A cancellation while it waits is delivered once it is settled
        (the batch is in the log summary: it must be stored or dropped first).
        """
        pipeline = self.pipeline
        if pipeline is None:
            pipeline = self.pipeline = _Pipeline()
            asyncio.get_running_loop().call_soon(self._ripen, pipeline)
        pipeline.batches.append(piped)
        self.staged += 1
        self._kick()
        cancelled = False
        while not pipeline.done.done():
            try:
                await asyncio.shield(pipeline.done)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            cancel_again()
        error = self._core.write_errors.pop(piped.write, None) or pipeline.error
        if error is not None:
            raise error
        return stored

    def busy(self) -> bool:
        """True while a batch would wait for the connection (it may be staged instead)."""
        return self.in_flight is not None or self.pipeline is not None or self.conn_waiters > 0

    def _split(self) -> int:
        """Batches at which a group commits before its round ends: half of the writers.

        Many runs writing in turn then settle into two halves, one committing on
        the worker while the loop thread runs the other's steps, instead of all
        of them waiting for one commit while the loop thread idles.
        """
        return max(4, self._writers // 2)

    def _ripen(self, pipeline: _Pipeline) -> None:
        pipeline.ripe = True
        self._kick()

    def _kick(self) -> None:
        """Hand the staged batches to the worker once the connection is free for them.

        Once half the writers are staged (see ``_split``) or their round ended.
        """
        pipeline = self.pipeline
        if pipeline is None or self.in_flight is not None or self.conn_waiters:
            return
        if not pipeline.ripe and len(pipeline.batches) < self._split():
            return
        self.pipeline = None
        flight = asyncio.wrap_future(
            self._worker.submit(self._core.commit_pipeline, pipeline.batches)
        )
        self.in_flight = flight

        def done(finished: asyncio.Future[Any]) -> None:
            self.in_flight = None
            if finished.cancelled():  # (the worker never cancels a call it took)
                pipeline.error = asyncio.CancelledError()
            else:
                pipeline.error = finished.exception()
            pipeline.done.set_result(None)
            self._settle()
            self._kick()

        flight.add_done_callback(done)

    def leave(self) -> None:
        """A call that waited for the connection is done with it (see ``_call``)."""
        self.conn_waiters -= 1
        if not self.conn_waiters and self.pipeline is not None:
            self._kick()

    async def commit_now(self) -> None:
        """Commit the open transaction (if any) and wait for it: ``store.flush()``.

        Staged batches are committed first.
        """
        core = self._core
        await self.landed()
        while self.pipeline is not None:
            self.pipeline.ripe = True
            self._kick()
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
        window = self._window
        if run_id in window:  # every run writing in turn has written once
            self._writers = len(window)
            window.clear()
        window.add(run_id)
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
            self._kick()

        flight.add_done_callback(done)

    def _settle(self) -> None:
        """Wake the waiters of every transaction settled so far (committed or failed)."""
        settled = self._core.committed_gen
        for gen in [g for g in self._waiting if g <= settled]:
            for future in self._waiting.pop(gen):
                if not future.done():
                    future.set_result(None)


__all__ = ["GroupCommit", "cancel_again"]
