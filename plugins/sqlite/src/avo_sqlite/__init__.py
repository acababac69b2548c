"""avo-sqlite: the embedded default event store, plus the SQLite side stores."""

from avo_sqlite.store import FencedSQLiteEventStore, SQLiteEventStore

__all__ = ["FencedSQLiteEventStore", "SQLiteEventStore"]
