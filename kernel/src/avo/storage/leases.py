"""Run leases with fencing tokens: one writer per run.

A store that supports leases offers::

    lease = await store.acquire_lease(run_id, owner, ttl)   # LeaseError if someone else holds it
    lease = await store.renew_lease(lease, ttl)              # LeaseError if fenced off
    writer = store.fenced(lease)                             # an EventStore view
    await writer.append_event(event)   # LeaseError unless lease.token is current
    await store.release_lease(lease)

Every acquisition bumps the run's token, so a stale holder that wakes up after
its lease expired and was taken over cannot append: its token is no longer the
current one. While a live lease exists, writes that do not go through the lease
are refused too. See ``docs/stores.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Lease:
    """The right of ``owner`` to write to ``run_id`` while ``token`` is the run's current token."""

    run_id: str
    owner: str
    token: int
    expires_at: datetime


__all__ = ["Lease"]
