"""Event stores: the protocol and the in-memory default.

Durable stores (SQLite, PostgreSQL) ship as plugins in the ``avo.stores`` group.
"""

from avo.storage.base import EventStore, EventTailStore, events_after
from avo.storage.memory import InMemoryEventStore

__all__ = ["EventStore", "EventTailStore", "InMemoryEventStore", "events_after"]
