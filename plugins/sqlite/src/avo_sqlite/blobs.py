"""Image and document bytes of runs (:mod:`avo.blobs`) in the avo SQLite file: table ``blobs``.

Content-addressed: a blob's id is ``sha256:<hex>`` of its bytes, so the same
image attached to many runs, or referred to by every checkpoint of one run,
is stored once. :class:`BlobTable` is a side store on its own connection (like
sessions and the ledger) that creates the table on first use;
:class:`SQLiteBlobs` mixes the async :class:`~avo.blobs.BlobStore` methods
into the event store, each call on a worker thread. A put commits before it
returns, so the bytes are durable before any event refers to them.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from avo.blobs import blob_id, check_blob_id
from avo.exceptions import StorageError
from avo.models import utc_now
from avo_sqlite._sync import SyncSQLiteStore

_DDL = """
CREATE TABLE IF NOT EXISTS blobs (
    blob_id TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID
"""


class BlobTable(SyncSQLiteStore):
    """The blobs of one avo SQLite file (synchronous; see :class:`SQLiteBlobs`)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._ready = False

    def _ensure(self) -> None:
        if self._ready:
            return
        if self._read_only is None:
            with self._tx("creating the blobs table") as conn:
                conn.execute(_DDL)
        self._ready = True

    def put(self, ref: str, data: bytes, media_type: str) -> None:
        """Store ``data`` under ``ref`` (its digest, checked); a second put is a no-op."""
        if blob_id(data) != check_blob_id(ref):
            raise StorageError(f"blob {ref} does not match the digest of its bytes")
        self._ensure()
        with self._tx(f"storing blob {ref}") as conn:
            conn.execute(
                "INSERT OR IGNORE INTO blobs (blob_id, media_type, size, data, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (ref, media_type, len(data), sqlite3.Binary(data), utc_now().isoformat()),
            )

    def get(self, ref: str) -> bytes | None:
        """The bytes under ``ref``, or None (also for a file made before blobs existed)."""
        self._ensure()
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT data FROM blobs WHERE blob_id = ?", (ref,)
                ).fetchone()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return None
                raise StorageError(f"SQLite error reading blob {ref}: {exc}") from exc
        return bytes(row[0]) if row is not None else None


class SQLiteBlobs:
    """The async :class:`~avo.blobs.BlobStore` methods of ``SQLiteEventStore``."""

    path: Path
    _blob_table: BlobTable | None = None
    _blob_lock = threading.Lock()

    def _blobs(self) -> BlobTable:
        table = self._blob_table
        if table is None:
            with self._blob_lock:
                table = self._blob_table
                if table is None:
                    table = self._blob_table = BlobTable(self.path)
        return table

    def _close_blobs(self) -> None:
        table, self._blob_table = self._blob_table, None
        if table is not None:
            table.close()

    async def put_blob(self, ref: str, data: bytes, media_type: str) -> None:
        """Store a run's image or document bytes under their digest (durable on return)."""
        await asyncio.to_thread(lambda: self._blobs().put(ref, data, media_type))

    async def get_blob(self, ref: str) -> bytes | None:
        """The bytes stored under ``ref``, or None."""
        return await asyncio.to_thread(lambda: self._blobs().get(ref))


__all__ = ["BlobTable", "SQLiteBlobs"]
