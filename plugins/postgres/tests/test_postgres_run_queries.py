"""avo-postgres answers run listings in SQL exactly as the scanning fallback does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from avo.storage.queries import RunQueryStore
from avo.testing.run_queries import RunQueryConformance
from avo_postgres import PostgresEventStore

pytestmark = pytest.mark.postgres


class TestPostgresRunQueries(RunQueryConformance):
    @pytest.fixture
    async def store(self, pg_schema: tuple[str, str]) -> AsyncIterator[Any]:
        dsn, schema = pg_schema
        opened = PostgresEventStore(dsn, schema=schema)
        assert isinstance(opened, RunQueryStore)
        try:
            yield opened
        finally:
            await opened.close()
