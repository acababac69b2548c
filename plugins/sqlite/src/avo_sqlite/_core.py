"""The synchronous half of SQLiteEventStore: every statement runs here.

:class:`SQLiteCore` owns one connection and the per-run caches. It runs on
the event loop thread when a call cannot block, else on the store's worker
thread (``SQLiteEventStore._call``); ``lock`` keeps the two apart. Each write
joins the connection's open transaction (see ``_txn``) and (1) checks the
run's lease, (2) re-reads the run's last sequence and reloads the cached
:class:`~avo.events.RunLogState` if another writer (process or store) moved
it, (3) validates every event with :func:`~avo.events.validate_event_append`,
and (4) writes. Steps (1) and (2) are skipped while ``PRAGMA data_version``
shows that no other connection committed since they were last made. Any
failure rolls back the write and drops the run's caches, so the next write
rebuilds them from the database. Committing is the store's group commit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from avo.events import (
    TERMINAL_EVENT_TYPES,
    AgentEvent,
    EventType,
    RunLogState,
)
from avo.exceptions import (
    EventInvariantError,
    RunNotFoundError,
    StorageError,
)
from avo.models import Checkpoint, RunRecord, replaced
from avo.storage.batch import apply_batch, check_batch_shape
from avo.storage.leases import Lease
from avo_sqlite._checkpoints import (
    CheckpointCursor,
    DeltaPlan,
    load_latest,
    next_item,
    plan_delta,
    write_delta,
)
from avo_sqlite._codec import key_range
from avo_sqlite._heads import HeadOps
from avo_sqlite._leases import LeaseOps
from avo_sqlite._neighbours import register, unregister
from avo_sqlite._payloads import event_row, insert_events
from avo_sqlite._reads import ReadOps
from avo_sqlite._retention import RetentionOps
from avo_sqlite._schema import BUSY_TIMEOUT_MS, open_database
from avo_sqlite._txn import Transactions

CACHE_KIB = 32 * 1024
"""SQLite page cache of the store's connection (KiB)."""
_CACHE_RUNS = 4096
"""Runs whose log summary and checkpoint cursor are kept. More than the runs a store
drives at once: an evicted run's next write re-reads its whole log (256 made 1,000
concurrent runs 30x slower a step)."""


BARRIER_EVENTS: frozenset[EventType] = frozenset(
    {EventType.RUN_CREATED, EventType.TOOL_STARTED, EventType.TOOL_COMPLETED, EventType.TOOL_FAILED}
    | TERMINAL_EVENT_TYPES
)
"""Events durable before the append returns: they precede or record a tool's effect,
or end the run. Other writes are acknowledged at once and committed with the next
group commit, at the latest ``commit_delay`` seconds later."""


class SQLiteCore(Transactions, HeadOps, LeaseOps, ReadOps, RetentionOps):
    """One connection plus the per-run invariant and checkpoint caches.

    What the database holds after a crash is always a prefix of each run's
    log in which every tool start and result the process acted on is
    present: those writes (:data:`BARRIER_EVENTS`) are durable before their
    append returns, and others are committed in order with or before them.
    """

    def __init__(self, path: Path, *, synchronous: str, commit_delay: float) -> None:
        self.path = path
        self.commit_delay = commit_delay
        self.conn, self.read_only = open_database(path, synchronous=synchronous)
        # Serialises the connection between the event loop thread (calls that cannot
        # block) and the worker thread (everything else).
        self.lock = threading.Lock()
        self.inline = False
        # Without fsync on commit, a commit never waits: it may run on the event loop
        # thread. WAL checkpoints (which fsync) run on the worker thread, on its own
        # connection, so they never hold this one.
        self.inline_commits = synchronous.upper() in ("OFF", "NORMAL")
        self.conn.execute("PRAGMA wal_autocheckpoint = 0")
        # Each run being driven keeps a few pages hot (its newest event, checkpoint and
        # item pages): SQLite's default 2 MB cache holds those of a few hundred runs, so
        # up to 32 MB (allocated only as pages are used) for a store serving many.
        self.conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self._init_transactions()
        register(self)  # side stores on this file commit it before waiting (_neighbours)
        self._broken: StorageError | None = None
        self._states: OrderedDict[str, RunLogState] = OrderedDict()
        self._cursors: OrderedDict[str, CheckpointCursor] = OrderedDict()
        self._keys: dict[str, int] = {}
        self._created: dict[str, datetime] = {}  # runs.created_at as last written here
        # Run records written by effect-free appends, kept until the transaction's
        # next read of `runs` or its commit: a step rewrites its run head 7 times.
        self._pending_runs: dict[str, RunRecord] = {}
        # Checks already made, valid while no other connection commits (see
        # _see_other_writers): runs whose cached state is current, and lease checks passed.
        self._fresh: set[str] = set()
        self._leases_checked: set[tuple[str, int | None]] = set()
        self._data_version: int | None = None
        self._busy_ms = BUSY_TIMEOUT_MS

    # ------------------------------------------------------------------ helpers
    def close(self) -> None:
        unregister(self)
        try:
            self.flush()
        finally:
            self.conn.close()

    def _forget(self, run_id: str) -> None:
        self._states.pop(run_id, None)
        self._cursors.pop(run_id, None)
        self._fresh.discard(run_id)

    def _key(self, run_id: str, *, refresh: bool = False) -> int | None:
        """The run's integer key (AUTOINCREMENT: never reused, so safe to cache)."""
        if not refresh and run_id in self._keys:
            return self._keys[run_id]
        row = self.conn.execute("SELECT run_key FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            self._keys.pop(run_id, None)
            return None
        self._keys[run_id] = int(row[0])
        return int(row[0])

    def _log_state(self, run_id: str) -> tuple[RunLogState, int | None]:
        """The run's invariant summary and key, reloaded if another writer appended meanwhile."""
        cached = self._states.get(run_id)
        if cached is not None and run_id in self._fresh:
            return cached, self._keys.get(run_id)
        key = self._key(run_id)
        last = 0
        if key is not None:
            low, high = key_range(key)
            row = self.conn.execute(
                "SELECT MAX(event_key) FROM events WHERE event_key BETWEEN ? AND ?", (low, high)
            ).fetchone()
            last = 0 if row[0] is None else int(row[0]) - low
        if cached is None or cached.last_sequence != last or cached.last_sequence == 0:
            key = self._key(run_id, refresh=True)
            cached = RunLogState.from_events(run_id, self._events(run_id, key))
            self._cursors.pop(run_id, None)
            self._states[run_id] = cached
            if len(self._states) > _CACHE_RUNS:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(run_id)
        self._fresh.add(run_id)
        return cached, key

    def _stage(self, state: RunLogState, key: int | None, event: AgentEvent) -> AgentEvent:
        """Validate ``event``, number it and fold it into ``state`` (no I/O).

        A caller that fails after this must drop the run's cache (``_write`` does).
        """
        if key is None or (not state.created and event.event_type is not EventType.RUN_CREATED):
            raise RunNotFoundError(f"run {state.run_id} does not exist", run_id=state.run_id)
        sequence = state.last_sequence + 1
        stored = event if event.sequence == sequence else replaced(event, sequence=sequence)
        state.accept(stored)  # validate_event_append + apply, in one pass
        return stored

    def _append(self, state: RunLogState, key: int | None, event: AgentEvent) -> AgentEvent:
        stored = self._stage(state, key, event)
        assert key is not None
        insert_events(self.conn, key, [stored])
        return stored

    @staticmethod
    def _same_run(run_id: str, event: AgentEvent) -> None:
        if event.run_id != run_id:
            raise EventInvariantError(
                f"run {run_id}: event {event.event_type.value} belongs to run {event.run_id}",
                run_id=run_id,
            )

    # ------------------------------------------------------------------ writes
    def create_run(self, run: RunRecord, event: AgentEvent, lease: Lease | None) -> RunRecord:
        self._same_run(run.run_id, event)
        if event.event_type is not EventType.RUN_CREATED:
            raise EventInvariantError(
                f"run {run.run_id}: the first event must be run_created, "
                f"got {event.event_type.value}",
                run_id=run.run_id,
            )
        with self._write(run.run_id, "creating a run", barrier=True) as conn:
            self._check_lease(run.run_id, lease)
            exists = conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run.run_id,)).fetchone()
            if exists is not None:
                raise EventInvariantError(
                    f"run {run.run_id}: run_created may appear only once", run_id=run.run_id
                )
            self._put_run(run, insert=True)
            state = RunLogState(run_id=run.run_id)
            self._append(state, self._keys[run.run_id], event)
            self._states[run.run_id] = state
            self._fresh.add(run.run_id)
        return run

    def append_event(self, event: AgentEvent, lease: Lease | None) -> AgentEvent:
        barrier = event.event_type in BARRIER_EVENTS
        with self._write(event.run_id, "appending an event", barrier=barrier):
            self._check_lease(event.run_id, lease)
            return self._append(*self._log_state(event.run_id), event)

    def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord, lease: Lease | None
    ) -> tuple[AgentEvent, RunRecord]:
        self._same_run(run.run_id, event)
        barrier = event.event_type in BARRIER_EVENTS
        with self._write(run.run_id, "appending an event", barrier=barrier):
            self._check_lease(run.run_id, lease)
            stored = self._append(*self._log_state(run.run_id), event)
            self._put_run(run, insert=False, defer=True)
        return stored, run

    def update_run(self, run: RunRecord, lease: Lease | None) -> RunRecord:
        with self._write(run.run_id, "updating a run", barrier=False):
            self._check_lease(run.run_id, lease)
            self._put_run(run, insert=False)
        return run

    def _plan(self, run_id: str, key: int | None, checkpoint: Checkpoint) -> DeltaPlan:
        """What storing ``checkpoint`` as a delta writes (reads the last one if not cached)."""
        # A cursor survives only while the run's sequence is unchanged since we cached
        # it (_log_state drops it on reload): another writer's checkpoint moves it.
        cursor = self._cursors.get(run_id)
        first_item = 1
        if cursor is None and key is not None:
            loaded = load_latest(self.conn, run_id, key)  # read (and fail) before writing
            cursor = None if loaded is None else loaded[1]
            if cursor is None:
                first_item = next_item(self.conn, key)
        if key is None:
            raise RunNotFoundError(f"run {run_id} does not exist", run_id=run_id)
        try:
            return plan_delta(key, cursor, checkpoint, first_item)
        except (TypeError, ValueError) as exc:
            raise StorageError(
                f"run {run_id}: checkpoint {checkpoint.checkpoint_id} holds a value that is "
                f"not JSON ({exc}); nothing was stored"
            ) from exc

    def _store_delta(self, run_id: str, plan: DeltaPlan) -> None:
        self._keep_cursor(run_id, write_delta(self.conn, plan))

    def _keep_cursor(self, run_id: str, cursor: CheckpointCursor) -> None:
        self._cursors[run_id] = cursor
        if len(self._cursors) > _CACHE_RUNS:
            self._cursors.popitem(last=False)

    def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent, lease: Lease | None
    ) -> tuple[Checkpoint, AgentEvent]:
        run_id = checkpoint.run_id
        self._same_run(run_id, event)
        with self._write(run_id, "saving a checkpoint", barrier=False):
            self._check_lease(run_id, lease)
            state, key = self._log_state(run_id)
            plan = self._plan(run_id, key, checkpoint)
            stored = self._append(state, key, event)
            self._store_delta(run_id, plan)
        return checkpoint, stored

    def append_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None,
        lease: Lease | None,
    ) -> list[AgentEvent]:
        """Events, run head and checkpoint in one transaction (see ``BatchEventStore``).

        Every event is validated, numbered and encoded, and the checkpoint
        planned, before any row is written. A batch that joins a transaction
        other writes began (a group) leaves its rows to the commit, which
        inserts them with those of the other batches (see ``_txn``). Every
        batch is a barrier: durable before ``append_batch`` returns (a batch is
        the runtime's durable boundary; several runs' batches share a commit).
        """
        run_id = run.run_id
        check_batch_shape(run, events, checkpoint)
        with self._write(run_id, "appending a batch of events", barrier=True) as conn:
            self._check_lease(run_id, lease)
            state, key = self._log_state(run_id)
            if key is None or not state.created:
                raise RunNotFoundError(f"run {run_id} does not exist", run_id=run_id)
            # Validated in place (a runtime ValidatedBatch that follows the cached log is
            # folded in); on any failure _write drops the run's cached state, rebuilt
            # from the database, which this call has not touched yet.
            stored = apply_batch(state, run, events, checkpoint)
            plan = None if checkpoint is None else self._plan(run_id, key, checkpoint)
            if not self.joining or any(event.parent_event_id is not None for event in stored):
                # alone in its transaction (one run writing: it commits at once anyway)
                insert_events(conn, key, stored)
                if plan is not None:
                    self._store_delta(run_id, plan)
            else:  # joining a group: the rows go in with the commit (see ``_txn``)
                rows = [event_row(key, event) for event in stored]
                if plan is None:
                    self.defer(run_id, rows, [], None)
                else:
                    self.defer(run_id, rows, plan.items, plan.head)
                    self._keep_cursor(run_id, plan.cursor)
            self._put_run(run, insert=False, defer=True)
        return stored

    def finalize_run(
        self,
        run: RunRecord,
        state_event: AgentEvent,
        terminal_event: AgentEvent,
        lease: Lease | None,
    ) -> tuple[AgentEvent, AgentEvent]:
        self._same_run(run.run_id, state_event)
        self._same_run(run.run_id, terminal_event)
        with self._write(run.run_id, "finalizing a run", barrier=True):
            self._check_lease(run.run_id, lease)
            state, key = self._log_state(run.run_id)
            # both events are validated before either is written (a failure drops the cache)
            first = self._stage(state, key, state_event)
            second = self._stage(state, key, terminal_event)
            assert key is not None
            insert_events(self.conn, key, [first, second])
            self._put_run(run, insert=False)
        return first, second
