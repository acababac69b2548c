"""Who is driving a run: lease owners, liveness, and holding a lease while driving.

A front end that drives a run (``avo run``, ``avo runs resume``, the chat
REPL, a worker) holds the run's lease (:mod:`avo.storage.leases`) for as long
as it drives, renewing it in the background, so everyone else can see the run
is live and a second driver is refused with a message naming the holder.

Owner names are ``"{front}:{host}:{pid}"``: on the same host a holder whose
process is gone is known to be dead (``avo runs list`` shows the run as
interrupted, and resuming takes its lease over at once instead of waiting for
it to expire).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from avo.exceptions import LeaseError, RunBusyError

logger = logging.getLogger("avo.ops")

LEASE_TTL_SECONDS = 15.0
"""How long a lease lasts without renewal (a holder renews every third of it)."""


def owner_name(front: str = "avo") -> str:
    """This process's lease owner name: ``front:host:pid``."""
    return f"{front}:{socket.gethostname()}:{os.getpid()}"


def process_alive(owner: str) -> bool | None:
    """Whether the process behind ``owner`` is alive: None when that cannot be known.

    Known only for owners named by :func:`owner_name` on this host.
    """
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[1] != socket.gethostname() or not parts[2].isdigit():
        return None
    pid = int(parts[2])
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Holder:
    """The live lease of a run: who holds it, until when, and whether its process is alive."""

    owner: str
    expires_at: datetime
    alive: bool | None

    def describe(self) -> str:
        """``avo-cli:host:123`` plus ``(process gone)`` when it is known to be dead."""
        return self.owner + (" (process gone)" if self.alive is False else "")


async def current_holder(store: Any, run_id: str) -> Holder | None:
    """The run's live lease holder, or None (also for stores without leases)."""
    get = getattr(store, "get_lease", None)
    if get is None:
        return None
    lease = await get(run_id)
    if lease is None:
        return None
    return Holder(lease.owner, lease.expires_at, process_alive(lease.owner))


def busy_error(run_id: str, holder: Holder, doing: str) -> RunBusyError:
    """The one-line refusal for ``doing`` (e.g. "resume") a run someone is driving."""
    return RunBusyError(
        f"run {run_id} is being driven by {holder.owner} right now (its lease runs until "
        f"{holder.expires_at:%H:%M:%S} and is renewed while it drives); cannot {doing} it: "
        "stop it there (Ctrl-C) or wait until it finishes",
        run_id=run_id,
        owner=holder.owner,
    )


async def _acquire(store: Any, run_id: str, owner: str, ttl: float, doing: str) -> Any:
    try:
        return await store.acquire_lease(run_id, owner, ttl)
    except LeaseError:
        holder = await current_holder(store, run_id)
        if holder is None:  # released in between
            return await store.acquire_lease(run_id, owner, ttl)
        if holder.alive is not False:
            raise busy_error(run_id, holder, doing) from None
    # The holder's process is gone (same host): take its lease over at once.
    logger.info("run %s: taking over the lease of %s (process gone)", run_id, holder.owner)
    stale = await store.acquire_lease(run_id, holder.owner, ttl)
    await store.release_lease(stale)
    return await store.acquire_lease(run_id, owner, ttl)


async def _keep_renewing(store: Any, lease: Any, ttl: float) -> None:
    while True:
        await asyncio.sleep(ttl / 3)
        try:
            lease = await store.renew_lease(lease, ttl)
        except LeaseError as exc:  # fenced off: the next write will be refused anyway
            logger.warning("run %s: lost its lease: %s", lease.run_id, exc)
            return
        except Exception as exc:  # a transient store error: try again next round
            logger.warning("run %s: could not renew its lease: %s", lease.run_id, exc)


@contextlib.asynccontextmanager
async def holding_lease(
    store: Any,
    run_id: str,
    *,
    owner: str | None = None,
    ttl: float = LEASE_TTL_SECONDS,
    doing: str = "drive",
) -> AsyncIterator[Any]:
    """Hold ``run_id``'s lease while the block runs; yields the store to write through.

    The lease is renewed every ``ttl / 3`` seconds and released at the end.
    A store without leases is yielded as is. Refused with :class:`RunBusyError`
    (naming the holder) while another live process holds the lease.
    """
    if getattr(store, "acquire_lease", None) is None or getattr(store, "lease", None) is not None:
        yield store  # no leases here, or already a fenced view
        return
    lease = await _acquire(store, run_id, owner or owner_name(), ttl, doing)
    renewer = asyncio.ensure_future(_keep_renewing(store, lease, ttl))
    try:
        yield store.fenced(lease)
    finally:
        renewer.cancel()
        with contextlib.suppress(BaseException):
            await renewer
        try:
            await store.release_lease(lease)
        except Exception as exc:
            logger.warning("run %s: could not release its lease: %s", run_id, exc)


__all__ = [
    "LEASE_TTL_SECONDS",
    "Holder",
    "RunBusyError",
    "busy_error",
    "current_holder",
    "holding_lease",
    "owner_name",
    "process_alive",
]
