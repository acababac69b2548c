"""InMemoryEventStore passes the shared EventStore conformance suite."""

from __future__ import annotations

from typing import Any, ClassVar

from avo.storage.memory import InMemoryEventStore
from avo.testing.stores import EventStoreConformance


class TestInMemoryConformance(EventStoreConformance):
    shares_location: ClassVar[bool] = False

    async def make_store(self, location: Any) -> InMemoryEventStore:
        return InMemoryEventStore()
