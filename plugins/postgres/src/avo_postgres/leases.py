"""Run leases with fencing tokens on PostgreSQL: one writer per run.

The API is the kernel's (:mod:`avo.storage.leases`)::

    lease = await store.acquire_lease(run_id, owner, ttl)  # LeaseError if another owner holds it
    writer = store.fenced(lease)                           # an EventStore view carrying the token
    await writer.append_event(event)                       # LeaseError once fenced off
    lease = await store.renew_lease(lease, ttl)
    await store.release_lease(lease)

A run's lease lives on its ``avo_runs`` row (owner, token, expiry), so every
write's compare-and-set checks it atomically with the sequence (see
:mod:`avo_postgres.writes`): a write either commits before a takeover or is
refused after it. A lease taken before the run exists waits in ``avo_leases``
and moves onto the run row when ``create_run`` inserts it; both steps hold a
per-run advisory lock, so neither can miss the other. Every acquisition bumps
the token. The database's clock is the only clock, so hosts with skewed
clocks agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from avo.events import AgentEvent
from avo.exceptions import LeaseError
from avo.models import Checkpoint, RunRecord
from avo.storage.leases import Lease
from avo_postgres.writes import lease_refusal

if TYPE_CHECKING:
    from avo_postgres.store import PostgresEventStore

# pg_advisory_xact_lock(int4, int4) namespace for per-run lease locks ("avol").
_LEASE_LOCK_KEY = 0x61766F6C

_RUN_LEASE = (
    "SELECT lease_owner, lease_token, lease_expires_at, "
    "coalesce(lease_expires_at > clock_timestamp(), false) AS lease_live "
    "FROM avo_runs WHERE run_id = $1 FOR UPDATE"
)
_PENDING_LEASE = (
    "SELECT owner AS lease_owner, token AS lease_token, expires_at AS lease_expires_at, "
    "coalesce(expires_at > clock_timestamp(), false) AS lease_live "
    "FROM avo_leases WHERE run_id = $1 FOR UPDATE"
)


def check_ttl(ttl: float) -> float:
    """Return ``ttl`` as seconds, refusing anything but a positive number."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise LeaseError(f"lease ttl={ttl!r} must be a positive number of seconds")
    return float(ttl)


async def lock_run_leases(conn: Any, run_id: str) -> None:
    """Serialise lease changes and run creation for ``run_id`` (until the transaction ends)."""
    await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", _LEASE_LOCK_KEY, run_id)


async def adopt_pending_lease(conn: Any, run_id: str, lease: Lease | None) -> None:
    """In create_run's transaction: move a lease taken before the run existed onto its row.

    Refuses (LeaseError) a creator that may not write under that lease.
    """
    pending = await conn.fetchrow(_PENDING_LEASE, run_id)
    if pending is None:
        if lease is not None:
            raise LeaseError(
                f"lease token {lease.token} of run {run_id} is stale: the run has no lease; "
                "nothing was written",
                run_id=run_id,
            )
        return
    refusal = lease_refusal(run_id, pending, lease)
    if refusal is not None:
        raise refusal
    await conn.execute(
        "UPDATE avo_runs SET lease_owner = $2, lease_token = $3, lease_expires_at = $4 "
        "WHERE run_id = $1",
        run_id,
        pending["lease_owner"],
        pending["lease_token"],
        pending["lease_expires_at"],
    )
    await conn.execute("DELETE FROM avo_leases WHERE run_id = $1", run_id)


async def current(conn: Any, run_id: str) -> Lease | None:
    """The live lease of ``run_id`` (on its run row, or still pending), or None."""
    for query in (_RUN_LEASE, _PENDING_LEASE):
        row = await conn.fetchrow(query.removesuffix(" FOR UPDATE"), run_id)
        if row is not None:
            if row["lease_live"] and row["lease_owner"] is not None:
                return Lease(
                    run_id=run_id,
                    owner=row["lease_owner"],
                    token=row["lease_token"],
                    expires_at=row["lease_expires_at"],
                )
            if query is _RUN_LEASE:
                return None
    return None


async def acquire(conn: Any, run_id: str, owner: str, ttl: float) -> Lease:
    """Take the lease in the caller's transaction; LeaseError while another owner holds it."""
    await lock_run_leases(conn, run_id)
    row = await conn.fetchrow(_RUN_LEASE, run_id)
    table, key, prefix = "avo_runs", "run_id", "lease_"
    if row is None:  # the run does not exist yet: the lease waits in avo_leases
        await conn.execute(
            "INSERT INTO avo_leases (run_id) VALUES ($1) ON CONFLICT (run_id) DO NOTHING", run_id
        )
        row = await conn.fetchrow(_PENDING_LEASE, run_id)
        table, prefix = "avo_leases", ""
    if row["lease_live"] and row["lease_owner"] != owner:
        raise LeaseError(
            f"run {run_id} is leased by {row['lease_owner']!r} (token {row['lease_token']}) "
            "until its lease expires or is released; try again later",
            run_id=run_id,
        )
    granted = await conn.fetchrow(
        f"UPDATE {table} SET {prefix}owner = $2, {prefix}token = {prefix}token + 1, "
        f"{prefix}expires_at = clock_timestamp() + make_interval(secs => $3) "
        f"WHERE {key} = $1 RETURNING {prefix}token AS token, {prefix}expires_at AS expires_at",
        run_id,
        owner,
        ttl,
    )
    return Lease(
        run_id=run_id, owner=owner, token=granted["token"], expires_at=granted["expires_at"]
    )


async def renew(conn: Any, lease: Lease, ttl: float) -> Lease:
    """Extend ``lease``; LeaseError if it was fenced off."""
    await lock_run_leases(conn, lease.run_id)
    row = await conn.fetchrow(_RUN_LEASE, lease.run_id)
    table, prefix = "avo_runs", "lease_"
    if row is None:
        row = await conn.fetchrow(_PENDING_LEASE, lease.run_id)
        table, prefix = "avo_leases", ""
    refusal = (
        lease_refusal(lease.run_id, row, lease)
        if row is not None
        else LeaseError(
            f"lease token {lease.token} of run {lease.run_id} is stale: the run has no lease",
            run_id=lease.run_id,
        )
    )
    if refusal is not None:
        raise refusal
    expires_at = await conn.fetchval(
        f"UPDATE {table} SET {prefix}owner = $2, "
        f"{prefix}expires_at = clock_timestamp() + make_interval(secs => $3) "
        f"WHERE run_id = $1 RETURNING {prefix}expires_at",
        lease.run_id,
        lease.owner,
        ttl,
    )
    return Lease(run_id=lease.run_id, owner=lease.owner, token=lease.token, expires_at=expires_at)


async def release(conn: Any, lease: Lease) -> None:
    """Give the lease up; a token already fenced off has nothing to release."""
    await conn.execute(
        "UPDATE avo_runs SET lease_owner = NULL, lease_expires_at = NULL "
        "WHERE run_id = $1 AND lease_token = $2",
        lease.run_id,
        lease.token,
    )
    await conn.execute(
        "UPDATE avo_leases SET owner = NULL, expires_at = NULL WHERE run_id = $1 AND token = $2",
        lease.run_id,
        lease.token,
    )


class FencedPostgresStore:
    """An EventStore view of a PostgresEventStore whose writes carry one lease's token.

    Reads go straight to the store. Writes to the lease's run are refused with
    LeaseError, appending nothing, once a newer token exists. ``close`` does
    nothing: the view shares the store's pool, which the store owns.
    """

    def __init__(self, store: PostgresEventStore, lease: Lease) -> None:
        self._store = store
        self.lease = lease

    def __repr__(self) -> str:
        return f"{self._store!r}.fenced(token={self.lease.token}, owner={self.lease.owner!r})"

    @property
    def store(self) -> PostgresEventStore:
        """The store this view writes through (its sessions are kept there, unfenced)."""
        return self._store

    def _lease(self, run_id: str) -> Lease:
        if run_id != self.lease.run_id:
            raise LeaseError(
                f"this writer holds the lease of run {self.lease.run_id}, not of run {run_id}; "
                "acquire that run's lease",
                run_id=run_id,
            )
        return self.lease

    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        """create_run under the lease."""
        return await self._store._create_run(run, event, lease=self._lease(run.run_id))

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        """append_event under the lease."""
        return await self._store._append(event, None, lease=self._lease(event.run_id))

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        """append_event_and_update_run under the lease."""
        lease = self._lease(event.run_id)
        return await self._store._append_and_update(event, run, lease=lease)

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        """save_checkpoint under the lease."""
        lease = self._lease(checkpoint.run_id)
        return await self._store._save_checkpoint(checkpoint, event, lease=lease)

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        """finalize_run under the lease."""
        lease = self._lease(run.run_id)
        return await self._store._finalize(run, state_event, terminal_event, lease=lease)

    async def append_batch(
        self,
        run: RunRecord,
        events: Sequence[AgentEvent],
        checkpoint: Checkpoint | None = None,
    ) -> list[AgentEvent]:
        """append_batch under the lease."""
        lease = self._lease(run.run_id)
        return await self._store._append_batch(run, events, checkpoint, lease=lease)

    async def update_run(self, run: RunRecord) -> RunRecord:
        """update_run under the lease."""
        return await self._store._update_run(run, lease=self._lease(run.run_id))

    async def get_run(self, run_id: str) -> RunRecord | None:
        """As the store's."""
        return await self._store.get_run(run_id)

    async def list_runs(self) -> list[RunRecord]:
        """As the store's."""
        return await self._store.list_runs()

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        """As the store's."""
        return await self._store.get_events(run_id)

    async def get_events_after(self, run_id: str, after: int) -> list[AgentEvent]:
        """As the store's."""
        return await self._store.get_events_after(run_id, after)

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """As the store's."""
        return await self._store.get_latest_checkpoint(run_id)

    async def get_lease(self, run_id: str) -> Lease | None:
        """As the store's."""
        return await self._store.get_lease(run_id)

    async def is_terminal_run(self, run_id: str) -> bool:
        """As the store's."""
        return await self._store.is_terminal_run(run_id)

    async def close(self) -> None:
        """Nothing to release: the store owns the pool."""
        return None
