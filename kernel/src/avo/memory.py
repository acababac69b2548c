"""Long-term memory seam: the MemoryProvider contract and the Lethe adapter.

``AgentRuntime(memory=...)`` takes a :class:`LetheMemoryAdapter`. Before the
first model call the runtime recalls memories for the task and injects one
system message, built by :func:`memory_message`::

    Relevant memories:
    - first memory
    - second memory

Where recall and write-back happen in a run is :mod:`avo.memory_bundle` (the
request seam; ``AgentRuntime(memory=...)`` wraps what it is given there). The
stores that ship as plugins (``avo.memory`` group, ``[memory]`` in avo.toml)
also implement :class:`ManagedMemory`, which ``avo memory`` uses.

The adapter works over any store with Lethe's ``MemoryStore`` interface —
``recall(query, *, k)`` returning records (objects with ``.content``, mappings
with ``"content"``, or plain strings) and ``remember(content, *, session_id)``.
Both may be plain methods or coroutines: with a synchronous store
``recall_text`` returns a list directly; with an asynchronous one it returns an
awaitable of that list (the runtime awaits whatever is awaitable). The
``arecall_text`` / ``aremember_output`` coroutines work with either.

No outside package is imported: install Lethe (or any compatible store)
separately and pass its store in. :class:`InMemoryMemoryStore` is the small
built-in store used by tests and examples.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from avo.exceptions import ConfigError
from avo.models import new_id, utc_now

MEMORY_HEADER = "Relevant memories:"


@runtime_checkable
class MemoryProvider(Protocol):
    """A store of long-term memories the runtime can recall from and write to."""

    async def recall(self, query: str, *, k: int = 5) -> Sequence[object]:
        """Return up to ``k`` records relevant to ``query``, most relevant first."""
        ...

    async def remember(
        self, content: str, *, session_id: str, tags: list[str] | None = None
    ) -> object:
        """Persist one memory record and return it."""
        ...


@runtime_checkable
class ManagedMemory(Protocol):
    """A memory store people can look through and prune (``avo memory list/forget``).

    Searching is :meth:`MemoryProvider.recall`. Records are objects with at least
    ``memory_id`` and ``content`` attributes (``created_at``, ``tags``, ``score``
    and ``scope`` are shown when present).
    """

    async def list_memories(self, *, limit: int = 50, offset: int = 0) -> Sequence[object]:
        """Memories of this store's scope, most recently written first."""
        ...

    async def forget(self, memory_ids: Sequence[str]) -> int:
        """Delete memories by id (a unique id prefix is enough); return how many."""
        ...


def _record_text(record: object) -> str:
    if isinstance(record, str):
        return record
    if isinstance(record, Mapping):
        return str(record.get("content", record))
    return str(getattr(record, "content", record))


def _bound(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class LetheMemoryAdapter:
    """Adapt a Lethe-style ``MemoryStore`` to the runtime's memory recall seam.

    Only bounded text snippets reach the model (``max_chars`` per memory, at
    most ``recall_k`` of them); the event log is never fed back as memory.
    """

    def __init__(self, store: Any, *, recall_k: int = 5, max_chars: int = 2000) -> None:
        if recall_k <= 0:
            raise ConfigError(f"recall_k must be positive, got {recall_k}", key="recall_k")
        if max_chars <= 0:
            raise ConfigError(f"max_chars must be positive, got {max_chars}", key="max_chars")
        for method in ("recall", "remember"):
            if not callable(getattr(store, method, None)):
                raise ConfigError(
                    f"memory store {type(store).__name__} has no {method}() method; pass an "
                    "object with recall(query, *, k) and remember(content, *, session_id)",
                    key="store",
                )
        self.store = store
        self.recall_k = recall_k
        self.max_chars = max_chars

    def _texts(self, records: object) -> list[str]:
        if records is None:
            return []
        items: Iterable[object]
        if isinstance(records, str | bytes | Mapping) or not isinstance(records, Iterable):
            items = [records]
        else:
            items = records
        texts = [_bound(_record_text(record), self.max_chars) for record in items]
        return [text for text in texts if text][: self.recall_k]

    def recall_text(self, query: str) -> list[str] | Awaitable[list[str]]:
        """Memory texts for ``query`` (an awaitable of them when the store is async)."""
        records = self.store.recall(query, k=self.recall_k)
        if inspect.isawaitable(records):
            return self._await_texts(records)
        return self._texts(records)

    async def _await_texts(self, pending: Awaitable[object]) -> list[str]:
        return self._texts(await pending)

    async def arecall_text(self, query: str) -> list[str]:
        """Memory texts for ``query``, for sync and async stores alike."""
        result = self.recall_text(query)
        if inspect.isawaitable(result):
            return await result
        return result

    def remember_output(self, content: str, *, session_id: str) -> object:
        """Persist a final agent output (blank output is skipped; returns None then).

        With an async store this returns the store's awaitable.
        """
        if not content.strip():
            return None
        return self.store.remember(content, session_id=session_id)

    async def aremember_output(self, content: str, *, session_id: str) -> object:
        """Persist a final agent output, for sync and async stores alike."""
        result = self.remember_output(content, session_id=session_id)
        if inspect.isawaitable(result):
            return await result
        return result


def format_memories(texts: Sequence[str]) -> str | None:
    """The ``Relevant memories:`` block for ``texts``, or None when there are none."""
    lines = [f"- {text.strip()}" for text in texts if text and text.strip()]
    if not lines:
        return None
    return "\n".join([MEMORY_HEADER, *lines])


async def memory_message(memory: Any, query: str) -> dict[str, str] | None:
    """Recall for ``query`` through ``memory.recall_text`` and build the system message.

    ``recall_text`` may return a list or an awaitable of one. Returns None when
    nothing relevant was recalled (the runtime then injects nothing).
    """
    result = memory.recall_text(query)
    if inspect.isawaitable(result):
        result = await result
    content = format_memories([str(text) for text in result or []])
    if content is None:
        return None
    return {"role": "system", "content": content}


# --------------------------------------------------------------------- test store

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class MemoryRecord:
    """One remembered text."""

    content: str
    session_id: str
    tags: tuple[str, ...] = ()
    memory_id: str = field(default_factory=new_id)
    created_at: str = field(default_factory=lambda: utc_now().isoformat())


class InMemoryMemoryStore:
    """A tiny async :class:`MemoryProvider`: word-overlap recall, nothing persisted.

    Meant for tests and examples; a real deployment passes Lethe's store.
    """

    def __init__(self) -> None:
        self.records: list[MemoryRecord] = []

    async def remember(
        self, content: str, *, session_id: str, tags: list[str] | None = None
    ) -> MemoryRecord:
        record = MemoryRecord(content=content, session_id=session_id, tags=tuple(tags or ()))
        self.records.append(record)
        return record

    async def recall(self, query: str, *, k: int = 5) -> list[MemoryRecord]:
        words = {word.lower() for word in _WORD.findall(query)}
        scored = []
        for position, record in enumerate(self.records):
            overlap = len(words & {word.lower() for word in _WORD.findall(record.content)})
            if overlap:
                scored.append((-overlap, -position, record))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [record for _, _, record in scored[:k]]


__all__ = [
    "MEMORY_HEADER",
    "InMemoryMemoryStore",
    "LetheMemoryAdapter",
    "ManagedMemory",
    "MemoryProvider",
    "MemoryRecord",
    "format_memories",
    "memory_message",
]
