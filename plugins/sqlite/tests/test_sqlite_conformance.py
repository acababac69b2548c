"""SQLiteEventStore passes the shared EventStore conformance suite."""

from __future__ import annotations

from typing import Any

from avo.testing.stores import EventStoreConformance
from avo_sqlite import SQLiteEventStore


class TestSQLiteConformance(EventStoreConformance):
    """The default configuration: group commit of effect-free writes."""

    async def make_store(self, location: Any) -> SQLiteEventStore:
        return SQLiteEventStore(location)

    async def settle(self, store: Any) -> None:
        await store.flush()


class TestSQLiteConformanceCommitEachWrite(EventStoreConformance):
    """commit_delay=0: every write commits before it returns (no settle needed)."""

    async def make_store(self, location: Any) -> SQLiteEventStore:
        return SQLiteEventStore(location, commit_delay=0)
