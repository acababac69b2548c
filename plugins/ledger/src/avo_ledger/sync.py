"""Bring the token ledger up to date with the event log it lives beside.

The ledger hook writes a row when it is told of a stored MODEL_RESPONDED event
(``avo_event_appended``). A process killed between the store write and that
call never tells it, although the event is in the log. :func:`catch_up` closes
that gap: for every run of the file whose log goes past the sequence the ledger
last checked (:meth:`avo_sqlite.TokenLedger.behind`, one query), it reads the
events after that sequence from the store (:func:`avo.storage.base.events_after`)
and records the usage events the ledger lacks. Rows are keyed by event, so an
event recorded both ways counts once. Rows added here carry no cost: the report
prices them with the configuration's price book, by provider and model.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avo.exceptions import StorageError
from avo.storage.base import events_after
from avo_ledger.recorder import event_usage
from avo_sqlite import TokenLedger


@dataclass
class CatchUp:
    """What one catch-up did."""

    runs_checked: int = 0
    rows_added: int = 0


async def catch_up(ledger: TokenLedger, store: Any) -> CatchUp:
    """Record the model calls of ``store``'s runs that ``ledger`` (the same file) lacks."""
    done = CatchUp()
    for run in ledger.behind():
        events = await events_after(store, run.run_id, run.synced_through)
        if not events:
            continue
        rows = [row for row in map(event_usage, events) if row is not None]
        through = max(event.sequence for event in events)
        done.rows_added += ledger.catch_up(run.run_id, rows, through)
        done.runs_checked += 1
    return done


def catch_up_file(database: Path) -> CatchUp | None:
    """:func:`catch_up` the ledger of the SQLite store at ``database`` (``avo cost`` does).

    A read-only file is left as it is (None), with a note on stderr when its ledger
    is behind the log.
    """
    import asyncio

    from avo_sqlite import SQLiteEventStore

    with TokenLedger(database) as ledger:
        try:
            behind = ledger.behind()
        except StorageError:  # a read-only file from before the ledger kept its place
            return None
        if not behind:
            return CatchUp()
        if ledger.read_only is not None:
            print(
                f"avo cost: {len(behind)} run(s) in {database} may have model calls the ledger "
                f"has not recorded, and the file is read-only ({ledger.read_only}); "
                "`avo cost --events` prices them from the log",
                file=sys.stderr,
            )
            return None

        async def sync() -> CatchUp:
            async with SQLiteEventStore(database) as store:
                return await catch_up(ledger, store)

        return asyncio.run(sync())


def bring_up_to_date(database: Path) -> None:
    """:func:`catch_up_file` before a report, when the file exists.

    When that cannot be done now (the file is busy past the write timeout), the
    report is made from the ledger as it is, with a note on stderr.
    """
    if not database.exists():
        return
    try:
        catch_up_file(database)
    except StorageError as exc:
        print(
            f"avo cost: could not bring the ledger up to date with the event log ({exc}); "
            "the report may leave out model calls whose ledger row was never written. "
            "Run avo cost again, or avo cost --events",
            file=sys.stderr,
        )


__all__ = ["CatchUp", "bring_up_to_date", "catch_up", "catch_up_file"]
