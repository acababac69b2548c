"""SQLiteEventStore passes the shared EventStore conformance suite."""

from __future__ import annotations

from typing import Any

from avo.testing.stores import EventStoreConformance
from avo_sqlite import SQLiteEventStore


class TestSQLiteConformance(EventStoreConformance):
    async def make_store(self, location: Any) -> SQLiteEventStore:
        return SQLiteEventStore(location)
