"""avo-sqlite answers run listings in SQL exactly as the scanning fallback does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from avo.storage.queries import RunQuery, RunQueryStore, query_runs
from avo.testing.run_queries import RunQueryConformance
from avo_sqlite import SQLiteEventStore


class TestSQLiteRunQueries(RunQueryConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> Any:
        opened = SQLiteEventStore(tmp_path / "runs.db")
        try:
            yield opened
        finally:
            await opened.close()


async def test_the_store_offers_the_capability_and_rejects_foreign_cursors(
    tmp_path: Path,
) -> None:
    store = SQLiteEventStore(tmp_path / "runs.db")
    try:
        assert isinstance(store, RunQueryStore)
        from avo.models import utc_now
        from avo.storage.queries import encode_cursor

        with pytest.raises(Exception, match="not a cursor of this listing"):
            await query_runs(store, RunQuery(cursor=encode_cursor(utc_now(), "x")))
    finally:
        await store.close()
