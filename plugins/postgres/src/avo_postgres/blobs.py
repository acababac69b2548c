"""Image and document bytes of runs (:mod:`avo.blobs`) on PostgreSQL: table ``avo_blobs``.

A mixin of :class:`~avo_postgres.PostgresEventStore`. Content-addressed: a
blob's id is ``sha256:<hex>`` of its bytes, so bytes shared by many runs or
checkpoints are stored once. The table is created on first use (``CREATE
TABLE IF NOT EXISTS`` under a transaction-level advisory lock), in the
store's schema. A put commits before it returns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from avo.blobs import blob_id, check_blob_id
from avo.exceptions import StorageError
from avo.models import utc_now

_T = TypeVar("_T")
_LOCK_KEY = 0x61766F42  # "avoB": serialises the one-time table creation

_DDL = """
CREATE TABLE IF NOT EXISTS avo_blobs (
    blob_id text PRIMARY KEY,
    media_type text NOT NULL,
    size bigint NOT NULL,
    data bytea NOT NULL,
    created_at timestamptz NOT NULL
);
"""


class PostgresBlobs:
    """The async :class:`~avo.blobs.BlobStore` methods of ``PostgresEventStore``."""

    _blobs_ready: bool = False

    def _transaction(  # provided by PostgresEventStore
        self, action: str, isolation: str | None = None
    ) -> AbstractAsyncContextManager[Any]:
        raise NotImplementedError

    async def _read(self, action: str, query: Callable[[Any], Awaitable[_T]]) -> _T:
        raise NotImplementedError  # provided by PostgresEventStore

    async def _ensure_blobs(self) -> None:
        if self._blobs_ready:
            return
        async with self._transaction("creating the blobs table") as conn:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            await conn.execute(_DDL)
        self._blobs_ready = True

    async def put_blob(self, ref: str, data: bytes, media_type: str) -> None:
        """Store a run's image or document bytes under their digest (durable on return)."""
        if blob_id(data) != check_blob_id(ref):
            raise StorageError(f"blob {ref} does not match the digest of its bytes")
        await self._ensure_blobs()
        async with self._transaction(f"storing blob {ref}") as conn:
            await conn.execute(
                "INSERT INTO avo_blobs (blob_id, media_type, size, data, created_at) "
                "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (blob_id) DO NOTHING",
                ref,
                media_type,
                len(data),
                bytes(data),
                utc_now(),
            )

    async def get_blob(self, ref: str) -> bytes | None:
        """The bytes stored under ``ref``, or None."""
        await self._ensure_blobs()

        async def query(conn: Any) -> bytes | None:
            row = await conn.fetchrow("SELECT data FROM avo_blobs WHERE blob_id = $1", ref)
            return None if row is None else bytes(row["data"])

        return await self._read(f"reading blob {ref}", query)


__all__ = ["PostgresBlobs"]
