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
from avo_sqlite._schema import open_database


class SyncSQLiteStore:
    """Opens the shared avo schema; subclasses use :meth:`_tx` and :meth:`_query`."""

    error: type[StorageError] = StorageError

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._conn = open_database(self.path)
        except StorageError as exc:
            raise self.error(str(exc)) from exc
        self._lock = threading.Lock()

    @contextmanager
    def _tx(self, action: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self.error(f"SQLite error while {action} in {self.path}: {exc}") from exc
                raise

    def _query(self, action: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple]:  # type: ignore[type-arg]
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise self.error(f"SQLite error while {action} in {self.path}: {exc}") from exc

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
