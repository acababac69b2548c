"""The effect ledger: each tool call's outcome, in the run's database before it is acknowledged.

A tool activity may run more than once: Temporal retries it when the worker
running it dies or stops heartbeating. The ledger (a table next to the event
store's own, in the same SQLite file or PostgreSQL schema) makes that safe.
One row per (run id, call id), the idempotency key:

- ``started`` with the dispatch number, written before a non-pure tool runs;
- ``done`` with the ToolResult, written after it ran and before the activity
  returns; a retry finds it and returns the same result without running the
  tool again.

A retry that finds ``started`` for the same dispatch cannot tell whether the
tool took effect: for a non-idempotent tool that is an unknown outcome (the
run pauses for a person), an idempotent one simply runs again. A later
dispatch of the same call (a person approved running it again) starts over.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from avo.exceptions import ConfigError

TABLE = "avo_temporal_effects"


@dataclass(frozen=True)
class Entry:
    """A ledger row: ``state`` ``started`` or ``done``; ``result`` the ToolResult JSON when done."""

    state: str
    dispatch: int
    result: dict[str, Any] | None


class EffectLedger(Protocol):
    """Where tool outcomes are recorded under (run id, call id)."""

    async def get(self, run_id: str, call_id: str) -> Entry | None:
        """The row for this call, or None."""
        ...

    async def started(self, run_id: str, call_id: str, dispatch: int) -> bool:
        """Claim dispatch ``dispatch`` of this call (about to run the tool).

        Atomic: False when the row already holds this dispatch (or a later one),
        so of two attempts running at once only one runs the tool.
        """
        ...

    async def done(self, run_id: str, call_id: str, dispatch: int, result: dict[str, Any]) -> None:
        """Record the call's result (durable when this returns)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class SQLiteLedger:
    """The ledger in the SQLite store's database file (its own table, WAL mode)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = asyncio.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (run_id TEXT NOT NULL, call_id TEXT NOT NULL, "
                "state TEXT NOT NULL, dispatch INTEGER NOT NULL, result TEXT, "
                "PRIMARY KEY (run_id, call_id))"
            )
            conn.commit()
            self._conn = conn
        return self._conn

    async def _run(self, sql: str, args: tuple[Any, ...], fetch: bool = False) -> Any:
        def work() -> Any:
            conn = self._connection()
            rows = conn.execute(sql, args).fetchall()
            conn.commit()
            return rows

        async with self._lock:
            rows = await asyncio.to_thread(work)
        return rows if fetch else None

    async def get(self, run_id: str, call_id: str) -> Entry | None:
        rows = await self._run(
            f"SELECT state, dispatch, result FROM {TABLE} WHERE run_id = ? AND call_id = ?",
            (run_id, call_id),
            fetch=True,
        )
        if not rows:
            return None
        state, dispatch, result = rows[0]
        return Entry(state, int(dispatch), json.loads(result) if result else None)

    async def started(self, run_id: str, call_id: str, dispatch: int) -> bool:
        rows = await self._run(
            f"INSERT INTO {TABLE} (run_id, call_id, state, dispatch, result) "
            "VALUES (?, ?, 'started', ?, NULL) ON CONFLICT (run_id, call_id) DO UPDATE SET "
            f"state = 'started', dispatch = excluded.dispatch, result = NULL "
            f"WHERE {TABLE}.dispatch < excluded.dispatch RETURNING 1",
            (run_id, call_id, dispatch),
            fetch=True,
        )
        return bool(rows)

    async def done(self, run_id: str, call_id: str, dispatch: int, result: dict[str, Any]) -> None:
        await self._run(
            f"INSERT INTO {TABLE} (run_id, call_id, state, dispatch, result) "
            "VALUES (?, ?, 'done', ?, ?) ON CONFLICT (run_id, call_id) DO UPDATE SET "
            "state = 'done', dispatch = excluded.dispatch, result = excluded.result",
            (run_id, call_id, dispatch, json.dumps(result)),
        )

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class PostgresLedger:
    """The ledger in the PostgreSQL store's schema (asyncpg, a small pool)."""

    def __init__(self, dsn: str, schema: str | None = None) -> None:
        self.dsn = dsn
        self.table = f'"{schema}".{TABLE}' if schema else TABLE
        self._pool: Any = None
        self._opening = asyncio.Lock()

    async def _acquire(self) -> Any:
        async with self._opening:
            if self._pool is None:
                import asyncpg

                pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=4)
                await pool.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.table} (run_id TEXT NOT NULL, "
                    "call_id TEXT NOT NULL, state TEXT NOT NULL, dispatch INTEGER NOT NULL, "
                    "result TEXT, PRIMARY KEY (run_id, call_id))"
                )
                self._pool = pool
        return self._pool

    async def get(self, run_id: str, call_id: str) -> Entry | None:
        pool = await self._acquire()
        row = await pool.fetchrow(
            f"SELECT state, dispatch, result FROM {self.table} WHERE run_id = $1 AND call_id = $2",
            run_id,
            call_id,
        )
        if row is None:
            return None
        result = row["result"]
        return Entry(row["state"], int(row["dispatch"]), json.loads(result) if result else None)

    async def started(self, run_id: str, call_id: str, dispatch: int) -> bool:
        pool = await self._acquire()
        claimed = await pool.fetchval(
            f"INSERT INTO {self.table} AS t (run_id, call_id, state, dispatch, result) "
            "VALUES ($1, $2, 'started', $3, NULL) ON CONFLICT (run_id, call_id) DO UPDATE SET "
            "state = 'started', dispatch = excluded.dispatch, result = NULL "
            "WHERE t.dispatch < excluded.dispatch RETURNING 1",
            run_id,
            call_id,
            dispatch,
        )
        return claimed is not None

    async def done(self, run_id: str, call_id: str, dispatch: int, result: dict[str, Any]) -> None:
        pool = await self._acquire()
        await pool.execute(
            f"INSERT INTO {self.table} (run_id, call_id, state, dispatch, result) "
            "VALUES ($1, $2, 'done', $3, $4) ON CONFLICT (run_id, call_id) DO UPDATE SET "
            "state = 'done', dispatch = excluded.dispatch, result = excluded.result",
            run_id,
            call_id,
            dispatch,
            json.dumps(result),
        )

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


def ledger_for(location: str, store: Any, settings: dict[str, Any] | None = None) -> EffectLedger:
    """The ledger that lives with the event store at ``location``.

    Workers on several machines must share it, so the store must be one they
    all reach: a PostgreSQL URL, or (workers on one machine) a SQLite file.
    """
    if location.startswith(("postgres://", "postgresql://")):
        schema = (settings or {}).get("schema")
        return PostgresLedger(location, schema if isinstance(schema, str) else None)
    path = getattr(store, "path", None)
    if isinstance(path, Path | str) and str(path) not in {"", ":memory:"}:
        return SQLiteLedger(path)
    raise ConfigError(
        f"the temporal engine needs an event store every worker shares, not {location!r}: "
        "set [store] location to a PostgreSQL URL (or, for workers on one machine, a SQLite file)",
        key="store.location",
    )


__all__ = ["TABLE", "EffectLedger", "Entry", "PostgresLedger", "SQLiteLedger", "ledger_for"]
