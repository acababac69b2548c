"""The PostgreSQL store's reads (a mixin of PostgresEventStore).

Each read runs through the store's ``_read(action, query)``, which checks a
connection out of the pool and turns driver errors into ``StorageError``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from avo.events import AgentEvent
from avo.models import Checkpoint, RunRecord
from avo_postgres.checkpoints import read_latest
from avo_postgres.rows import decode_event, decode_record, row_is_terminal

_T = TypeVar("_T")


class StoreReads:
    """get_run, list_runs, get_events, get_latest_checkpoint, is_terminal_run."""

    async def _read(self, action: str, query: Callable[[Any], Awaitable[_T]]) -> _T:
        raise NotImplementedError  # provided by PostgresEventStore

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The stored run record, or None."""
        text = await self._read(
            f"reading run {run_id}",
            lambda conn: conn.fetchval("SELECT record FROM avo_runs WHERE run_id = $1", run_id),
        )
        return None if text is None else decode_record(text)

    async def list_runs(self) -> list[RunRecord]:
        """Every run, newest first."""
        rows = await self._read(
            "listing runs",
            lambda conn: conn.fetch(
                "SELECT record FROM avo_runs ORDER BY created_at DESC, insert_order DESC"
            ),
        )
        return [decode_record(row["record"]) for row in rows]

    async def query_runs(self, query: Any) -> Any:
        """One page of the runs matching ``query`` (an ``avo.storage.queries.RunQuery``)."""
        from avo_postgres.run_queries import query_page

        return await self._read("listing runs", lambda conn: query_page(conn, query))

    async def run_facet_values(self) -> Any:
        """Providers, models, tools and stop reasons of the newest runs (for filter pickers)."""
        from avo_postgres.run_queries import facet_sample

        return await self._read("listing runs", facet_sample)

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        """The run's events in ascending sequence ([] for an unknown run)."""
        rows = await self._read(
            f"reading the events of run {run_id}",
            lambda conn: conn.fetch(
                "SELECT run_id, sequence, event_id, event_type, created_at, payload, "
                "parent_event_id FROM avo_events WHERE run_id = $1 ORDER BY sequence",
                run_id,
            ),
        )
        return [decode_event(row) for row in rows]

    async def get_events_after(self, run_id: str, after: int) -> list[AgentEvent]:
        """The run's events with a sequence above ``after``, ascending (a live run's tail)."""
        rows = await self._read(
            f"reading the events of run {run_id}",
            lambda conn: conn.fetch(
                "SELECT run_id, sequence, event_id, event_type, created_at, payload, "
                "parent_event_id FROM avo_events WHERE run_id = $1 AND sequence > $2 "
                "ORDER BY sequence",
                run_id,
                after,
            ),
        )
        return [decode_event(row) for row in rows]

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """The run's latest checkpoint in full (one consistent snapshot), or None."""

        async def query(conn: Any) -> Checkpoint | None:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                return await read_latest(conn, run_id)

        return await self._read(f"reading the checkpoint of run {run_id}", query)

    async def is_terminal_run(self, run_id: str) -> bool:
        """True when the run's log ends with a terminal event (False for an unknown run)."""
        row = await self._read(
            f"reading run {run_id}",
            lambda conn: conn.fetchrow(
                "SELECT log_terminal, state FROM avo_runs WHERE run_id = $1", run_id
            ),
        )
        return row is not None and row_is_terminal(row)


__all__ = ["StoreReads"]
