"""The ``postgres`` store plugin (entry point ``avo.stores: postgres``).

Importing this module is cheap: asyncpg is imported only when a store connects.
"""

from __future__ import annotations

from typing import Any

from avo.plugins import StoreSpec, provides


def _postgres_factory(location: str, settings: dict[str, Any]) -> Any:
    """Open ``location`` (a postgresql:// URL) with the ``[store.settings]`` table."""
    from avo_postgres.store import store_from_settings

    return store_from_settings(location, settings or {})


postgres = provides(
    StoreSpec(
        name="postgres",
        factory=_postgres_factory,
        description="PostgreSQL event store: many processes and hosts append to one store",
        schemes=("postgresql", "postgres"),
    )
)
"""The pluggy plugin object the entry point names."""
