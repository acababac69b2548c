"""Run leases with fencing tokens (one writer per run), as a mixin of SQLiteCore."""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from datetime import UTC, datetime

from avo.exceptions import LeaseError
from avo.storage.leases import Lease


class LeaseOps:
    """acquire/renew/release and the per-write lease check (see avo.storage.leases)."""

    conn: sqlite3.Connection
    _leases_checked: set[tuple[str, int | None]]

    def _write(
        self, run_id: str, action: str, *, barrier: bool
    ) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # SQLiteCore's transaction wrapper

    def _check_lease(self, run_id: str, lease: Lease | None) -> None:
        key = (run_id, None if lease is None else lease.token)
        if key in self._leases_checked:
            return
        self._check_lease_row(run_id, lease)
        self._leases_checked.add(key)

    def _check_lease_row(self, run_id: str, lease: Lease | None) -> None:
        row = self.conn.execute(
            "SELECT owner, token, expires_at FROM leases WHERE run_id = ?", (run_id,)
        ).fetchone()
        if lease is None:
            if row is not None and row[0] is not None and row[2] > time.time():
                raise LeaseError(
                    f"run {run_id} is leased to {row[0]!r} (token {row[1]}); "
                    "write through store.fenced(lease) or wait for the lease to expire",
                    run_id=run_id,
                )
            return
        if lease.run_id != run_id:
            raise LeaseError(
                f"lease for run {lease.run_id} cannot write to run {run_id}", run_id=run_id
            )
        if row is None or row[1] != lease.token or row[0] != lease.owner:
            holder = "nobody" if row is None or row[0] is None else repr(row[0])
            current = "none" if row is None else row[1]
            raise LeaseError(
                f"run {run_id}: the lease of {lease.owner!r} (token {lease.token}) was fenced off; "
                f"the current token is {current}, held by {holder}",
                run_id=run_id,
            )

    def get_lease(self, run_id: str) -> Lease | None:
        """The run's live lease (who drives it, until when), or None. Reads only."""
        row = self.conn.execute(
            "SELECT owner, token, expires_at FROM leases WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None or row[0] is None or row[2] <= time.time():
            return None
        return Lease(run_id, row[0], int(row[1]), datetime.fromtimestamp(row[2], UTC))

    def acquire_lease(self, run_id: str, owner: str, ttl: float) -> Lease:
        if ttl <= 0:
            raise LeaseError(f"lease ttl must be positive seconds, got {ttl!r}", run_id=run_id)
        with self._write(run_id, "acquiring a lease", barrier=True) as conn:
            self._leases_checked.clear()  # the token moves: earlier checks no longer hold
            now = time.time()
            row = conn.execute(
                "SELECT owner, token, expires_at FROM leases WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is not None and row[0] is not None and row[0] != owner and row[2] > now:
                raise LeaseError(
                    f"run {run_id} is already leased to {row[0]!r} (token {row[1]}) for another "
                    f"{row[2] - now:.1f} s",
                    run_id=run_id,
                )
            token = 1 if row is None else int(row[1]) + 1
            conn.execute(
                "INSERT INTO leases (run_id, owner, token, expires_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner,"
                " token = excluded.token, expires_at = excluded.expires_at",
                (run_id, owner, token, now + ttl),
            )
        return Lease(run_id, owner, token, datetime.fromtimestamp(now + ttl, UTC))

    def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        with self._write(lease.run_id, "renewing a lease", barrier=True) as conn:
            self._check_lease(lease.run_id, lease)
            expires = time.time() + ttl
            conn.execute(
                "UPDATE leases SET expires_at = ? WHERE run_id = ?", (expires, lease.run_id)
            )
        return Lease(lease.run_id, lease.owner, lease.token, datetime.fromtimestamp(expires, UTC))

    def release_lease(self, lease: Lease) -> None:
        with self._write(lease.run_id, "releasing a lease", barrier=True) as conn:
            self._leases_checked.clear()
            conn.execute(
                "UPDATE leases SET owner = NULL, expires_at = 0"
                " WHERE run_id = ? AND token = ? AND owner = ?",
                (lease.run_id, lease.token, lease.owner),
            )
