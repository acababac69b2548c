"""avo-postgres: the avo event store on PostgreSQL, for several processes and hosts.

``PostgresEventStore(dsn)`` implements the EventStore protocol; the
``postgres`` store plugin opens ``postgresql://`` and ``postgres://`` URLs.
"""

from __future__ import annotations

from avo_postgres.schema import SCHEMA_VERSION
from avo_postgres.store import PostgresEventStore

__version__ = "1.0.0"

__all__ = [
    "SCHEMA_VERSION",
    "PostgresEventStore",
    "__version__",
]
