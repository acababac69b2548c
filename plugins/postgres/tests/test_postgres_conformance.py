"""PostgresEventStore passes the shared EventStore conformance suite on a real server."""

from __future__ import annotations

from typing import Any

import pytest

from avo.testing.stores import EventStoreConformance
from avo_postgres import PostgresEventStore

pytestmark = pytest.mark.postgres


class TestPostgresConformance(EventStoreConformance):
    @pytest.fixture
    def store_location(self, pg_schema: tuple[str, str]) -> Any:
        return pg_schema

    async def make_store(self, location: Any) -> PostgresEventStore:
        dsn, schema = location
        return PostgresEventStore(dsn, schema=schema)
