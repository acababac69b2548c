"""Where a run's images and documents live: a content-addressed blob store.

Media bytes never sit in events or checkpoints. When a run records a block
holding ``data`` (an attachment, an image a tool returned), the runtime puts
the bytes in its blob store under ``sha256:<hex digest>`` and keeps only the
reference in the transcript::

    {"type": "image", "media_type": "image/png", "blob": "sha256:9f2c...", "size": 34567}

The bytes are put (durably) before any event or checkpoint referring to them
is written, and the same bytes are stored once however many runs, messages or
checkpoints refer to them. Just before a model call the runtime reads them
back (:func:`resolve_messages`) into the request it sends, so providers only
ever see ``data`` or ``url`` sources.

A store offers blobs by implementing :class:`BlobStore` (``put_blob`` /
``get_blob``); the in-memory, SQLite and PostgreSQL stores do. With a store
that does not, the runtime keeps media inline (``data``) in the transcript:
correct, only larger.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from pydantic import JsonValue

from avo.exceptions import StorageError

BLOB_PREFIX = "sha256:"


@runtime_checkable
class BlobStore(Protocol):
    """Content-addressed bytes: put once under their digest, read back by it."""

    async def put_blob(self, ref: str, data: bytes, media_type: str) -> None:
        """Store ``data`` under ``ref`` (``sha256:<hex>`` of ``data``); idempotent."""
        ...

    async def get_blob(self, ref: str) -> bytes | None:
        """The bytes stored under ``ref``, or None."""
        ...


def blob_id(data: bytes) -> str:
    """The id of ``data``: ``sha256:`` and its hex SHA-256 digest."""
    return BLOB_PREFIX + hashlib.sha256(data).hexdigest()


def check_blob_id(value: str) -> str:
    """``value`` when it is a well-formed blob id, else StorageError naming it."""
    digest = value.removeprefix(BLOB_PREFIX)
    if not value.startswith(BLOB_PREFIX) or len(digest) != 64 or not _is_hex(digest):
        raise StorageError(f"{value[:80]!r} is not a blob id (expected sha256:<64 hex digits>)")
    return value


def _is_hex(text: str) -> bool:
    return all(ch in "0123456789abcdef" for ch in text)


class InMemoryBlobStore:
    """Blobs in a dict (what :class:`~avo.storage.memory.InMemoryEventStore` uses)."""

    def __init__(self) -> None:
        self._blobs: dict[str, tuple[bytes, str]] = {}

    async def put_blob(self, ref: str, data: bytes, media_type: str) -> None:
        """Keep ``data`` (checked against its id)."""
        if blob_id(data) != check_blob_id(ref):
            raise StorageError(f"blob {ref} does not match the digest of its bytes")
        self._blobs.setdefault(ref, (bytes(data), media_type))

    async def get_blob(self, ref: str) -> bytes | None:
        """The bytes, or None."""
        found = self._blobs.get(ref)
        return found[0] if found is not None else None

    def __len__(self) -> int:
        return len(self._blobs)


def blob_store_of(store: Any) -> BlobStore | None:
    """The blob store an event store offers: itself, the store a view wraps, or None."""
    for candidate in (store, getattr(store, "store", None)):
        if callable(getattr(candidate, "put_blob", None)) and callable(
            getattr(candidate, "get_blob", None)
        ):
            return candidate
    return None


async def store_blocks(
    blocks: Iterable[Mapping[str, JsonValue]], store: BlobStore | None
) -> list[dict[str, JsonValue]]:
    """``blocks`` with every ``data`` source moved into ``store`` (a ``blob`` reference).

    Text blocks and url/blob sources are kept as they are. With no store the
    blocks are returned unchanged (media stays inline).
    """
    out: list[dict[str, JsonValue]] = []
    for block in blocks:
        item = dict(block)
        data = item.get("data")
        if (
            store is not None
            and item.get("type") in ("image", "document")
            and isinstance(data, str)
        ):
            raw = base64.b64decode(data)
            ref = blob_id(raw)
            await store.put_blob(ref, raw, str(item.get("media_type") or ""))
            del item["data"]
            item["blob"] = ref
            item["size"] = len(raw)
        out.append(item)
    return out


class BlobCache:
    """Recently read blobs as base64 text, bounded by total size (least recently used out)."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, str] = OrderedDict()
        self._size = 0

    def get(self, key: str) -> str | None:
        """The cached base64 text, or None."""
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: str, value: str) -> None:
        """Remember ``value``; evict the oldest entries past ``max_bytes``."""
        if key in self._items:
            return
        self._items[key] = value
        self._size += len(value)
        while self._size > self.max_bytes and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            self._size -= len(old)


async def resolve_block(
    block: Mapping[str, JsonValue], store: BlobStore | None, cache: BlobCache | None = None
) -> dict[str, JsonValue]:
    """A block whose ``blob`` reference is replaced by its bytes (``data``, base64)."""
    ref = block.get("blob")
    if not isinstance(ref, str):
        return dict(block)
    encoded = cache.get(ref) if cache is not None else None
    if encoded is None:
        raw = await store.get_blob(ref) if store is not None else None
        if raw is None:
            raise StorageError(
                f"the {block.get('type')} {block.get('name') or ''} ({ref}) is not in this "
                "run's blob store; was the store copied without its blobs?".replace("  ", " ")
            )
        encoded = base64.b64encode(raw).decode("ascii")
        if cache is not None:
            cache.put(ref, encoded)
    item = {key: value for key, value in block.items() if key != "blob"}
    item["data"] = encoded
    return item


__all__ = [
    "BLOB_PREFIX",
    "BlobCache",
    "BlobStore",
    "InMemoryBlobStore",
    "blob_id",
    "blob_store_of",
    "check_blob_id",
    "resolve_block",
    "store_blocks",
]
