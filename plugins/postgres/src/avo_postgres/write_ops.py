"""The PostgreSQL store's write path (a mixin of PostgresEventStore).

A write validates its events against the run's cached head (or one loaded
from the database), then sends one statement: a compare-and-set on the run
row that also inserts everything else (see :mod:`avo_postgres.writes`). On a
lost compare-and-set it reloads the head and tries again.

``append_batch`` goes through the group writer when it can (see
:mod:`avo_postgres.group`): batches of many runs that arrive together are sent
as one statement, one round trip and one commit, each run still guarded by
its own compare-and-set. A batch whose run's head is not cached, or whose
checks need the database, or whose compare-and-set fails in the group, takes
the single path above.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from avo.events import AgentEvent, EventType, validate_event_append
from avo.exceptions import EventInvariantError, StorageError
from avo.models import Checkpoint, RunRecord, replaced
from avo.storage.batch import stale_batch
from avo.storage.leases import Lease
from avo_postgres.checkpoints import CachedLists, CheckpointRows, load_previous, plan_checkpoint
from avo_postgres.group import GroupItem, GroupWriter
from avo_postgres.writes import Head, build_write, learn_tool_call, load_head, needs_lookup

_MAX_ATTEMPTS = 100  # compare-and-set retries before a write gives up
_HEAD_CACHE_SIZE = 4096  # runs whose head one store instance remembers


@dataclass
class Staged:
    """A validated write, ready to be sent as one statement."""

    events: list[AgentEvent] = field(default_factory=list)
    checkpoint: CheckpointRows | None = None
    cache: CachedLists | None = None


class NeedsServer(Exception):
    """Staging without a connection met a check that must ask the database."""


class WriteOps:
    """``_write`` (single statement, with retries) and ``_write_grouped`` (the group path)."""

    _checkpoint_cache: dict[str, CachedLists]
    _heads: OrderedDict[str, Head]
    _run_locks: weakref.WeakValueDictionary[str, asyncio.Lock]
    _group: GroupWriter

    def _connection(self, action: str) -> Any:  # an async context manager (the store's)
        raise NotImplementedError

    def _run_lock(self, run_id: str) -> asyncio.Lock:
        # Writers of one run in this instance take turns (they would only make each
        # other's compare-and-set fail); the lock lives while someone holds it.
        lock = self._run_locks.get(run_id)
        if lock is None:
            lock = self._run_locks[run_id] = asyncio.Lock()
        return lock

    def _remember(self, head: Head) -> None:
        heads = self._heads
        heads[head.log.run_id] = head
        heads.move_to_end(head.log.run_id)
        while len(heads) > _HEAD_CACHE_SIZE:
            evicted, _ = heads.popitem(last=False)
            self._checkpoint_cache.pop(evicted, None)

    def _written(self, head: Head, staged: Staged) -> None:
        """Keep what a successful write left: the head and the checkpoint lists."""
        run_id = head.log.run_id
        if head.log.terminal:
            self._checkpoint_cache.pop(run_id, None)
            return
        if staged.cache is not None:
            self._checkpoint_cache[run_id] = staged.cache
        self._remember(head)

    async def _write_grouped(
        self,
        run: RunRecord,
        events: list[AgentEvent],
        checkpoint: Checkpoint | None,
        lease: Lease | None,
        action: str,
    ) -> Staged:
        """A batch through the group writer when its run's head is warm, else ``_write``."""
        run_id = run.run_id
        async with self._run_lock(run_id):
            head = self._heads.pop(run_id, None)
            if head is not None:
                head.freeze()
                try:
                    staged = await self._stage(None, head, events, checkpoint, True)
                except (NeedsServer, EventInvariantError):
                    pass  # maybe only a stale cache: the single path checks the database
                else:
                    item = GroupItem(head, lease, staged.events, run, staged.checkpoint)
                    if await self._group.submit(item):
                        self._written(head, staged)
                        return staged
                # Not applied (another writer appended, a lease, an error): start over
                # from the database; nothing of this attempt was stored.
            return await self._write_locked(run_id, events, run, checkpoint, lease, action, True)

    async def _write(
        self,
        run_id: str,
        events: list[AgentEvent],
        run: RunRecord | None,
        checkpoint: Checkpoint | None,
        lease: Lease | None,
        action: str,
        *,
        numbered: bool = False,
    ) -> Staged:
        """Validate and write, retrying on a lost compare-and-set (see avo_postgres.writes).

        ``numbered``: ``events`` is a batch whose pre-numbered sequences must fit.
        """
        if run is not None and run.run_id != run_id:
            raise StorageError(f"run record {run.run_id} does not match run {run_id}")
        async with self._run_lock(run_id):
            return await self._write_locked(
                run_id, events, run, checkpoint, lease, action, numbered
            )

    async def _write_locked(
        self,
        run_id: str,
        events: list[AgentEvent],
        run: RunRecord | None,
        checkpoint: Checkpoint | None,
        lease: Lease | None,
        action: str,
        numbered: bool,
    ) -> Staged:
        conn_context: Any = self._connection(f"{action} of run {run_id}")
        async with conn_context as conn:
            for _ in range(_MAX_ATTEMPTS):
                head = self._heads.pop(run_id, None)
                cached = head is not None
                if head is None:
                    head = await load_head(conn, run_id, lease)
                head.freeze()
                try:
                    staged = await self._stage(conn, head, events, checkpoint, numbered)
                except EventInvariantError:
                    if cached:  # maybe only stale: validate against the database
                        continue
                    raise
                sql, args = build_write(
                    head,
                    lease,
                    staged.events,
                    run,
                    staged.checkpoint,
                    check_sequence=bool(events),
                )
                if await conn.fetchval(sql, *args):
                    self._written(head, staged)
                    return staged
                # Lost the compare-and-set: another writer appended, or the lease
                # forbids this write; the next round reloads and tells which.
        raise StorageError(
            f"gave up {action} of run {run_id} after {_MAX_ATTEMPTS} attempts: other writers "
            "kept appending first; drive each run from one worker (acquire_lease)"
        )

    async def _stage(
        self,
        conn: Any,
        head: Head,
        events: list[AgentEvent],
        checkpoint: Checkpoint | None,
        numbered: bool,
    ) -> Staged:
        """Validate ``events`` against ``head`` (applying them to it) and plan the checkpoint.

        ``numbered``: a batch, whose caller-given sequences must fit (StaleWriteError).
        ``conn`` None: stage from what this instance knows, or raise NeedsServer.
        """
        staged = Staged()
        log = head.log
        for event in events:
            if conn is None:
                if needs_lookup(head, event):
                    raise NeedsServer
            else:
                await learn_tool_call(conn, head, event)
            sequence = log.last_sequence + 1
            # The runtime pre-numbers its events: keep the object when the number fits, and
            # refuse a batch numbered for other slots (built from an out-of-date view).
            if numbered and event.sequence and event.sequence != sequence:
                raise stale_batch(log.run_id, event.sequence, sequence)
            validate_event_append(log, event)
            stored = event if event.sequence == sequence else replaced(event, sequence=sequence)
            log.apply(stored)
            if stored.event_type is EventType.TOOL_STARTED:
                head.known.add(str(stored.payload["tool_call_id"]))
            staged.events.append(stored)
        if checkpoint is not None:
            run_id = log.run_id
            previous = self._checkpoint_cache.get(run_id)
            if previous is None or (previous.ordinal, previous.checkpoint_id) != (
                head.checkpoint_ordinal,
                head.checkpoint_id,
            ):  # another writer checkpointed since (or the cache is cold): read them back
                if conn is None:
                    raise NeedsServer
                previous = await load_previous(conn, run_id, head.checkpoint_ordinal)
            head.checkpoint_ordinal += 1
            head.checkpoint_id = checkpoint.checkpoint_id
            staged.checkpoint, staged.cache = plan_checkpoint(
                checkpoint, head.checkpoint_ordinal, previous
            )
        return staged


__all__ = ["NeedsServer", "Staged", "WriteOps"]
