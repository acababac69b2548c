"""avo-sqlite: the embedded default event store, plus the SQLite side stores."""

from avo_sqlite.checkpoint_store import CheckpointError, CheckpointStore
from avo_sqlite.conversations import ConversationStore, ConversationTurn, HistoryError
from avo_sqlite.ledger import EventUsage, LedgerEntry, RunBehind, TokenLedger
from avo_sqlite.store import FencedSQLiteEventStore, SQLiteEventStore

__all__ = [
    "CheckpointError",
    "CheckpointStore",
    "ConversationStore",
    "ConversationTurn",
    "EventUsage",
    "FencedSQLiteEventStore",
    "HistoryError",
    "LedgerEntry",
    "RunBehind",
    "SQLiteEventStore",
    "TokenLedger",
]
