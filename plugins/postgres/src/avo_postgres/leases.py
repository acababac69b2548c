"""Run leases with fencing tokens on PostgreSQL: one writer per run.

The API is the kernel's (:mod:`avo.storage.leases`)::

    lease = await store.acquire_lease(run_id, owner, ttl)  # LeaseError if another owner holds it
    writer = store.fenced(lease)                           # an EventStore view carrying the token
    await writer.append_event(event)                       # LeaseError once fenced off
    lease = await store.renew_lease(lease, ttl)
    await store.release_lease(lease)

``avo_leases`` holds one row per run: owner, token, expiry. Every acquisition
bumps the token. Each write transaction locks the run row first and then reads
the lease row, and ``acquire_lease`` locks the run row before changing the
lease, so a write and an acquisition of one run are strictly ordered: a write
either commits before the new token exists or sees it and is refused. The
database's clock is the only clock, so hosts with skewed clocks agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from avo.events import AgentEvent
from avo.exceptions import LeaseError
from avo.models import Checkpoint, RunRecord
from avo.storage.leases import Lease

if TYPE_CHECKING:
    from avo_postgres.store import PostgresEventStore

_READ_LEASE = (
    "SELECT owner, token, coalesce(expires_at > clock_timestamp(), false) AS live "
    "FROM avo_leases WHERE run_id = $1"
)


def check_ttl(ttl: float) -> float:
    """Return ``ttl`` as seconds, refusing anything but a positive number."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise LeaseError(f"lease ttl={ttl!r} must be a positive number of seconds")
    return float(ttl)


async def check_write(conn: Any, run_id: str, token: int | None) -> None:
    """Refuse a write to ``run_id`` the lease rules forbid (caller holds the run row lock).

    With a token: it must be the run's newest. Without one: nobody may hold a
    live lease on the run.
    """
    row = await conn.fetchrow(_READ_LEASE, run_id)
    if token is not None:
        if row is None or row["token"] != token:
            newest = 0 if row is None else row["token"]
            holder = "nobody" if row is None or row["owner"] is None else repr(row["owner"])
            raise LeaseError(
                f"lease token {token} of run {run_id} is stale: the run's newest token is "
                f"{newest} (held by {holder}); nothing was written. Stop driving this run",
                run_id=run_id,
            )
        return
    if row is not None and row["live"]:
        raise LeaseError(
            f"run {run_id} is leased by {row['owner']!r} (token {row['token']}); this write "
            "holds no lease, so nothing was written. Write through store.fenced(lease) "
            "after acquire_lease(), or wait for the lease to be released",
            run_id=run_id,
        )


async def acquire(conn: Any, run_id: str, owner: str, ttl: float) -> Lease:
    """Take the lease in the caller's transaction; LeaseError while another owner holds it."""
    await conn.execute("SELECT 1 FROM avo_runs WHERE run_id = $1 FOR UPDATE", run_id)
    await conn.execute(
        "INSERT INTO avo_leases (run_id) VALUES ($1) ON CONFLICT (run_id) DO NOTHING", run_id
    )
    row = await conn.fetchrow(_READ_LEASE + " FOR UPDATE", run_id)
    if row["live"] and row["owner"] != owner:
        raise LeaseError(
            f"run {run_id} is leased by {row['owner']!r} (token {row['token']}) until its "
            "lease expires or is released; try again later",
            run_id=run_id,
        )
    granted = await conn.fetchrow(
        "UPDATE avo_leases SET owner = $2, token = token + 1, "
        "expires_at = clock_timestamp() + make_interval(secs => $3) WHERE run_id = $1 "
        "RETURNING token, expires_at",
        run_id,
        owner,
        ttl,
    )
    return Lease(
        run_id=run_id, owner=owner, token=granted["token"], expires_at=granted["expires_at"]
    )


async def renew(conn: Any, lease: Lease, ttl: float) -> Lease:
    """Extend ``lease``; LeaseError if it was fenced off."""
    await conn.execute("SELECT 1 FROM avo_runs WHERE run_id = $1 FOR UPDATE", lease.run_id)
    await check_write(conn, lease.run_id, lease.token)
    expires_at = await conn.fetchval(
        "UPDATE avo_leases SET owner = $2, "
        "expires_at = clock_timestamp() + make_interval(secs => $3) WHERE run_id = $1 "
        "RETURNING expires_at",
        lease.run_id,
        lease.owner,
        ttl,
    )
    return Lease(run_id=lease.run_id, owner=lease.owner, token=lease.token, expires_at=expires_at)


async def release(conn: Any, lease: Lease) -> None:
    """Give the lease up; a token already fenced off has nothing to release."""
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

    def _token(self, run_id: str) -> int:
        if run_id != self.lease.run_id:
            raise LeaseError(
                f"this writer holds the lease of run {self.lease.run_id}, not of run {run_id}; "
                "acquire that run's lease",
                run_id=run_id,
            )
        return self.lease.token

    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        """create_run under the lease."""
        return await self._store._create_run(run, event, token=self._token(run.run_id))

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        """append_event under the lease."""
        return await self._store._append(event, None, token=self._token(event.run_id))

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        """append_event_and_update_run under the lease."""
        token = self._token(event.run_id)
        return await self._store._append_and_update(event, run, token=token)

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        """save_checkpoint under the lease."""
        token = self._token(checkpoint.run_id)
        return await self._store._save_checkpoint(checkpoint, event, token=token)

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        """finalize_run under the lease."""
        token = self._token(run.run_id)
        return await self._store._finalize(run, state_event, terminal_event, token=token)

    async def update_run(self, run: RunRecord) -> RunRecord:
        """update_run under the lease."""
        return await self._store._update_run(run, token=self._token(run.run_id))

    async def get_run(self, run_id: str) -> RunRecord | None:
        """As the store's."""
        return await self._store.get_run(run_id)

    async def list_runs(self) -> list[RunRecord]:
        """As the store's."""
        return await self._store.list_runs()

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        """As the store's."""
        return await self._store.get_events(run_id)

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """As the store's."""
        return await self._store.get_latest_checkpoint(run_id)

    async def is_terminal_run(self, run_id: str) -> bool:
        """As the store's."""
        return await self._store.is_terminal_run(run_id)

    async def close(self) -> None:
        """Nothing to release: the store owns the pool."""
        return None
