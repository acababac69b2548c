"""Entry point of the ``sqlite`` store (group ``avo.stores``); cheap to import."""

from __future__ import annotations

from typing import Any

from avo.plugins import StoreSpec, provides


def _factory(location: str, settings: dict[str, Any]) -> Any:
    from avo_sqlite.store import SQLiteEventStore

    return SQLiteEventStore(location, **dict(settings))


sqlite = provides(
    StoreSpec(
        name="sqlite",
        factory=_factory,
        description="SQLite event store (WAL, delta checkpoints, run leases); the embedded default",
        schemes=("sqlite",),
        suffixes=(".db", ".sqlite", ".sqlite3"),
    )
)
