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


@dataclass
class _Held:
    """A lease :func:`holding_lease` holds, with its renewer (None while given up)."""

    store: Any
    run_id: str
    owner: str
    ttl: float
    view: Any
    lease: Any
    renewer: asyncio.Future[None] | None = None

    def start_renewing(self) -> None:
        self.renewer = asyncio.ensure_future(_keep_renewing(self.store, self.lease, self.ttl))

    async def stop_renewing(self) -> None:
        renewer, self.renewer = self.renewer, None
        if renewer is not None:
            renewer.cancel()
            with contextlib.suppress(BaseException):
                await renewer


_HELD: dict[int, _Held] = {}
"""The leases held by :func:`holding_lease`, by ``id()`` of the fenced view it yielded."""


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
    (naming the holder) while another live process holds the lease. While the
    block waits for a person it may give the lease up for a while
    (:func:`lease_given_up`).
    """
    if getattr(store, "acquire_lease", None) is None or getattr(store, "lease", None) is not None:
        yield store  # no leases here, or already a fenced view
        return
    name = owner or owner_name()
    lease = await _acquire(store, run_id, name, ttl, doing)
    view = store.fenced(lease)
    held = _Held(store, run_id, name, ttl, view, lease)
    held.start_renewing()
    _HELD[id(view)] = held
    try:
        yield view
    finally:
        _HELD.pop(id(view), None)
        await held.stop_renewing()
        if held.lease is not None:  # not given up (lease_given_up takes it back or raises)
            try:
                await store.release_lease(held.lease)
            except Exception as exc:
                logger.warning("run %s: could not release its lease: %s", run_id, exc)


RETAKE_SECONDS = 10.0
"""How long :func:`lease_given_up` tries to take a lease back from a brief holder."""


@contextlib.asynccontextmanager
async def lease_given_up(writer: Any) -> AsyncIterator[bool]:
    """Give up the lease behind ``writer`` for the block, then take it back.

    For a run paused for a person while a prompt waits: meanwhile anyone may
    take the lease to answer the run (``avo runs approve`` from another shell).
    Yields whether the lease was given up (False: ``writer`` is not a lease
    :func:`holding_lease` holds; nothing changes). It is taken back however
    the block ends, except by :class:`RunBusyError` (another process drives the
    run now: the writer writes no more). Taking it back waits up to
    :data:`RETAKE_SECONDS` for a brief holder (an answer being recorded), then
    raises :class:`RunBusyError` naming whoever drives the run now; the
    writer's writes go through the new lease (its token is the current one).
    """
    held = _HELD.get(id(writer))
    if held is None or held.lease is None:
        yield False
        return
    await held.stop_renewing()
    lease, held.lease = held.lease, None
    try:
        await held.store.release_lease(lease)
    except Exception as exc:  # not given up after all: keep it
        logger.warning("run %s: could not give up its lease: %s", held.run_id, exc)
        held.lease = lease
        held.start_renewing()
        yield False
        return
    marker = await _mark_waiting(held)
    try:
        yield True
    except RunBusyError:  # someone else drives the run now: stay away, write nothing more
        await _unmark_waiting(held, marker)
        raise
    except BaseException:  # an interrupt, a cancel: taken back so it can be recorded
        await _unmark_waiting(held, marker)
        await _retake(held)
        raise
    await _unmark_waiting(held, marker)
    await _retake(held)


WAITING = "#waiting"
"""Suffix of the marker lease (``RUN_ID#waiting``) a process holds while a prompt of its
waits for a person with the run's own lease given up (see :func:`waiting_here`)."""


async def _mark_waiting(held: _Held) -> tuple[Any, asyncio.Future[None]] | None:
    try:
        marker = await held.store.acquire_lease(held.run_id + WAITING, held.owner, held.ttl)
    except Exception as exc:  # only a courtesy to whoever answers: never fatal
        logger.info("run %s: no waiting marker: %s", held.run_id, exc)
        return None
    return marker, asyncio.ensure_future(_keep_renewing(held.store, marker, held.ttl))


async def _unmark_waiting(held: _Held, mark: tuple[Any, asyncio.Future[None]] | None) -> None:
    if mark is None:
        return
    marker, renewer = mark
    renewer.cancel()
    with contextlib.suppress(BaseException):
        await renewer
    with contextlib.suppress(Exception):
        await held.store.release_lease(marker)


async def waiting_here(store: Any, run_id: str) -> Holder | None:
    """The live process whose prompt waits on ``run_id`` with its lease given up, if any.

    An answer recorded now is picked up by that process, which continues the run.
    """
    holder = await current_holder(store, run_id + WAITING)
    return holder if holder is not None and holder.alive is not False else None


async def _retake(held: _Held) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RETAKE_SECONDS
    while True:
        try:
            lease = await _acquire(held.store, held.run_id, held.owner, held.ttl, "continue")
            break
        except RunBusyError:
            if loop.time() >= deadline:
                raise
            await asyncio.sleep(0.1)
    held.lease = lease
    held.view.lease = lease  # the fenced view writes with the current token again
    held.start_renewing()


__all__ = [
    "LEASE_TTL_SECONDS",
    "RETAKE_SECONDS",
    "WAITING",
    "Holder",
    "RunBusyError",
    "busy_error",
    "current_holder",
    "holding_lease",
    "lease_given_up",
    "owner_name",
    "process_alive",
    "waiting_here",
]
