"""A small synchronous base for the side stores (one connection, one lock)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

from avo.exceptions import StorageError
from avo_sqlite._neighbours import commit_open_transactions
from avo_sqlite._schema import BUSY_TIMEOUT_MS, open_database, read_only_error
from avo_sqlite._write_lock import wait_for_write_lock


class SyncSQLiteStore:
    """Opens the shared avo schema; subclasses use :meth:`_tx` and :meth:`_query`.

    Tables keyed by an id plus a per-id ``sequence`` (job checkpoints, conversation
    turns) also share :meth:`_insert_numbered` and :meth:`_truncate_keep_last`.
    Table and column names are the stores' own constants, never user input.
    """

    error: type[StorageError] = StorageError

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.exists():  # opening may write (schema, migrations): see _tx
            commit_open_transactions(self.path)
        try:
            self._conn, self._read_only = open_database(self.path)
        except StorageError as exc:
            raise self.error(str(exc)) from exc
        self._lock = threading.Lock()

    @contextmanager
    def _tx(self, action: str) -> Iterator[sqlite3.Connection]:
        if self._read_only is not None:
            raise self.error(str(read_only_error(self.path, self._read_only, action)))
        with self._lock:
            conn = self._conn
            # an event store of this process may hold the lock open for its group's
            # commit, which this thread (its event loop, maybe) would otherwise block
            commit_open_transactions(self.path)
            try:
                # our jittered wait, not SQLite's busy handler (see _write_lock)
                conn.execute("PRAGMA busy_timeout = 0")
                try:
                    wait_for_write_lock(conn, BUSY_TIMEOUT_MS / 1000)
                finally:
                    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if getattr(exc, "sqlite_errorcode", 0) & 0xFF == 8:  # SQLITE_READONLY
                    message = str(read_only_error(self.path, f"SQLite: {exc}", action))
                    raise self.error(message) from exc
                if isinstance(exc, sqlite3.Error):
                    raise self.error(f"SQLite error while {action} in {self.path}: {exc}") from exc
                raise

    def _query(self, action: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple]:  # type: ignore[type-arg]
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise self.error(f"SQLite error while {action} in {self.path}: {exc}") from exc

    def _insert_numbered(self, action: str, table: str, key: str, row: dict[str, object]) -> int:
        """Insert ``row`` numbered one past its ``key`` column's highest sequence (from 1).

        The read and the insert share one write transaction; returns the new sequence.
        """
        key_value = row[key]
        with self._tx(action) as conn:
            found = conn.execute(
                f"SELECT COALESCE(MAX(sequence), 0) FROM {table} WHERE {key} = ?", (key_value,)
            ).fetchone()
            sequence = int(found[0]) + 1
            rest = [name for name in row if name != key]
            columns = ", ".join([key, "sequence", *rest])
            placeholders = ", ".join("?" * (len(rest) + 2))
            conn.execute(
                f"INSERT INTO {table} ({columns}) VALUES ({placeholders})",
                (key_value, sequence, *(row[name] for name in rest)),
            )
        return sequence

    def _truncate_keep_last(
        self, action: str, table: str, key: str, key_value: str, keep_last: int
    ) -> int:
        """Delete all but the newest ``keep_last`` rows (by sequence) of ``key_value``.

        Returns how many rows were deleted.
        """
        if keep_last < 0:
            raise self.error(f"keep_last must be >= 0, got {keep_last}")
        with self._tx(action) as conn:
            cursor = conn.execute(
                f"DELETE FROM {table} WHERE {key} = ? AND sequence NOT IN"
                f" (SELECT sequence FROM {table} WHERE {key} = ?"
                " ORDER BY sequence DESC LIMIT ?)",
                (key_value, key_value, keep_last),
            )
            return int(cursor.rowcount)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
