"""The embedded memory store: one SQLite file, an FTS5 index, BM25 ranking.

Memories live in the ``memories`` table; ``memories_fts`` (FTS5, Porter
stemming over unicode61 tokens) indexes their text (and, as a second column,
their scope as one token). Triggers keep the index in step with the table.
Writes dedup on ``(scope, digest)``.

A recall stays fast however many memories there are, because it never asks
FTS5 to rank by a common word (FTS5's ``bm25()`` reads the whole posting list
of every word it ranks by):

1. each query word's memories are counted, no further than
   ``distinctive_matches`` + 1 (a short read even for a common word);
2. the words found in at most ``distinctive_matches`` memories are
   distinctive: FTS5 ranks the memories holding them (a bounded set) by BM25,
   and the best ``POOL`` of this scope are kept;
3. when that finds fewer than ``candidates``, the common words pick among the
   newest ``recent_window`` memories (those holding more of them first);
4. :func:`avo_memory.records.bm25` scores the pool by BM25 over every query
   word (a common word's frequency estimated from the pool), and
   :func:`avo_memory.records.rerank` blends the best ``candidates`` with
   recency.

The connection is opened on first use, in WAL mode, and every call runs in a
worker thread so the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from avo.exceptions import MemoryStoreError
from avo.redaction import Redactor
from avo_memory.records import (
    MAX_CONTENT_CHARS,
    Clock,
    MemoryRecord,
    bm25,
    check_ids,
    default_directory,
    digest,
    new_memory_id,
    query_terms,
    rerank,
    scope_key,
    tags_text,
)
from avo_memory.settings import SQLiteMemorySettings

SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    content TEXT NOT NULL,
    digest TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    session_id TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 1,
    UNIQUE (scope, digest)
);
CREATE INDEX IF NOT EXISTS memories_by_scope_time ON memories (scope, updated_at DESC);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    content, scope_token, content='memories', content_rowid='id',
    tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, scope_token)
    VALUES (new.id, new.content, replace(new.scope, '-', ''));
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, scope_token)
    VALUES ('delete', old.id, old.content, replace(old.scope, '-', ''));
END;
"""

_COLUMNS = "memory_id, scope, content, tags, session_id, created_at, updated_at, hits"
_BATCH = 200  # ids per lookup of ranked matches
POOL = 200  # memories a recall scores with every query word (at least 4 x candidates)
MAX_DISTINCTIVE = 8  # distinctive words a recall ranks by (the rarest first)


def _record(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        memory_id=row[0],
        scope=row[1],
        content=row[2],
        tags=tuple(json.loads(row[3] or "[]")),
        session_id=row[4],
        created_at=float(row[5]),
        updated_at=float(row[6]),
        hits=int(row[7]),
    )


def _content_expression(terms: Sequence[str]) -> str:
    """The FTS5 query for any of ``terms`` in the text (every term quoted: no syntax leaks)."""
    words = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f"content:({words})"


def _matches(db: sqlite3.Connection, term: str, most: int) -> int:
    """How many memories mention ``term``, counting no further than ``most``."""
    row = db.execute(
        "SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
        (_content_expression([term]), most),
    ).fetchone()
    return int(row[0])


def match_expression(terms: Sequence[str], scope: str) -> str:
    """The FTS5 query for ``terms`` within ``scope`` (every term quoted: no syntax leaks)."""
    words = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f'scope_token:"{scope.replace("-", "")}" AND content:({words})'


class SQLiteMemory:
    """A memory store in one SQLite file (see the module docstring).

    :param path: the database file (created with its directory when missing).
    :param scope: ``workspace`` or ``user``; ``workspace`` is keyed by ``workspace``.
    :param environ: for the redactor (secret-named variables are masked on write).
    :param clock: seconds since the epoch (injectable for tests of recency).
    """

    name = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        scope: str = "workspace",
        workspace: str | Path | None = None,
        settings: SQLiteMemorySettings | None = None,
        environ: Mapping[str, str] | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.path = Path(path)
        self.scope_name = scope
        self.scope = scope_key(scope, workspace)
        self.settings = settings or SQLiteMemorySettings()
        self.redactor = Redactor(environ=environ if environ is not None else {})
        self.clock = clock
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ connection

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(self.path), check_same_thread=False, timeout=10.0)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("PRAGMA busy_timeout=10000")
            with connection:
                connection.executescript(SCHEMA)
        except sqlite3.OperationalError as exc:
            if "fts5" in str(exc).lower():
                raise MemoryStoreError(
                    f"the SQLite library of this Python has no FTS5 ({exc}); use a Python built "
                    'with FTS5 (the official builds are) or [memory] provider = "postgres"',
                    provider=self.name,
                ) from exc
            raise MemoryStoreError(
                f"cannot open the memory database {self.path}: {exc}; check the path and its "
                "permissions ([memory.settings] path)",
                provider=self.name,
            ) from exc
        self._connection = connection
        return connection

    async def _call(self, function: Any, *args: Any) -> Any:
        def locked() -> Any:
            with self._lock:
                try:
                    return function(self._connect(), *args)
                except sqlite3.Error as exc:
                    raise MemoryStoreError(
                        f"memory database {self.path}: {type(exc).__name__}: {exc}",
                        provider=self.name,
                    ) from exc

        return await asyncio.to_thread(locked)

    async def close(self) -> None:
        """Close the connection (the next call opens it again)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # ------------------------------------------------------------ MemoryProvider

    async def remember(
        self, content: str, *, session_id: str, tags: Sequence[str] | None = None
    ) -> MemoryRecord:
        """Store ``content`` (redacted); an equal memory is refreshed, not duplicated."""
        text = self.redactor.text(content.strip())
        if not text:
            raise MemoryStoreError("an empty memory cannot be stored; give it some text")
        if len(text) > MAX_CONTENT_CHARS:
            text = text[: MAX_CONTENT_CHARS - 1].rstrip() + "…"
        return await self._call(self._remember, text, session_id, tags_text(tags))  # type: ignore[no-any-return]

    def _remember(
        self, db: sqlite3.Connection, text: str, session_id: str, tags: tuple[str, ...]
    ) -> MemoryRecord:
        now = self.clock()
        key = digest(text)
        with db:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND digest = ?", (self.scope, key)
            ).fetchone()
            if row is not None:
                merged = tags_text((*json.loads(row[3] or "[]"), *tags))
                db.execute(
                    "UPDATE memories SET updated_at = ?, hits = hits + 1, tags = ?, "
                    "session_id = ? WHERE memory_id = ?",
                    (now, json.dumps(list(merged)), session_id, row[0]),
                )
                old = _record(row)
                return MemoryRecord(
                    memory_id=old.memory_id,
                    content=old.content,
                    scope=old.scope,
                    tags=merged,
                    session_id=session_id,
                    created_at=old.created_at,
                    updated_at=now,
                    hits=old.hits + 1,
                )
            record = MemoryRecord(
                memory_id=new_memory_id(),
                content=text,
                scope=self.scope,
                tags=tags,
                session_id=session_id,
                created_at=now,
                updated_at=now,
            )
            db.execute(
                f"INSERT INTO memories ({_COLUMNS}, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.memory_id,
                    record.scope,
                    record.content,
                    json.dumps(list(tags)),
                    session_id,
                    now,
                    now,
                    1,
                    key,
                ),
            )
        return record

    async def recall(self, query: str, *, k: int = 5) -> list[MemoryRecord]:
        """Up to ``k`` memories of this scope relevant to ``query``, best first."""
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        return await self._call(self._recall, terms, k)  # type: ignore[no-any-return]

    def _recall(self, db: sqlite3.Connection, terms: list[str], k: int) -> list[MemoryRecord]:
        limit = max(self.settings.candidates, k)
        cap = self.settings.distinctive_matches
        counts = {term: _matches(db, term, cap + 1) for term in terms}
        rare = sorted((t for t in terms if counts[t] <= cap), key=counts.__getitem__)
        rare = rare[:MAX_DISTINCTIVE]
        size = max(limit * 4, POOL)
        pool: list[tuple[int, MemoryRecord]] = []
        if rare:
            # Every word here is in at most `cap` memories, so FTS5 ranks a bounded set
            # (its bm25() reads the whole posting list of each word it ranks by).
            ranked = db.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
                "AND rank MATCH 'bm25(1.0, 0.0)' ORDER BY rank",
                (_content_expression(rare),),
            ).fetchall()
            pool = self._in_scope(db, [row[0] for row in ranked], size)
        common = [t for t in terms if t not in rare]
        if len(pool) < limit and common:
            have = {rowid for rowid, _ in pool}
            pool += self._recent(db, common, size - len(pool), have)
        if not pool:
            return []
        top = db.execute("SELECT max(rowid) FROM memories").fetchone()[0] or len(pool)
        scored = bm25(pool, terms, counts, cap=cap, total=int(top))
        scored.sort(key=lambda item: -item[1])
        return rerank(
            scored[:limit],
            k=k,
            now=self.clock(),
            recency_weight=self.settings.recency_weight,
            half_life_days=self.settings.half_life_days,
        )

    def _in_scope(
        self, db: sqlite3.Connection, rowids: Sequence[int], limit: int
    ) -> list[tuple[int, MemoryRecord]]:
        """The first ``limit`` of ``rowids`` (in their order) that belong to this scope."""
        found: list[tuple[int, MemoryRecord]] = []
        for start in range(0, len(rowids), _BATCH):
            batch = rowids[start : start + _BATCH]
            order = {rowid: index for index, rowid in enumerate(batch)}
            rows = db.execute(
                f"SELECT id, {_COLUMNS} FROM memories WHERE +scope = ? "  # +: look up by id
                f"AND id IN ({', '.join('?' * len(batch))})",
                (self.scope, *batch),
            ).fetchall()
            rows.sort(key=lambda row: order[row[0]])
            found += [(row[0], _record(row[1:])) for row in rows]
            if len(found) >= limit:
                break
        return found[:limit]

    def _recent(
        self, db: sqlite3.Connection, terms: list[str], limit: int, have: set[int]
    ) -> list[tuple[int, MemoryRecord]]:
        """Common words only: among the newest ``recent_window`` memories, the ones holding
        the most of them (a word counting more the fewer memories hold it)."""
        top = db.execute("SELECT max(rowid) FROM memories").fetchone()[0]
        if top is None:
            return []
        window = self.settings.recent_window
        held: dict[int, float] = {}
        for term in terms:
            rows = db.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid > ?",
                (_content_expression([term]), top - window),
            ).fetchall()
            weight = math.log(1.0 + window / max(len(rows), 1))
            for (rowid,) in rows:
                held[rowid] = held.get(rowid, 0.0) + weight
        best = sorted((r for r in held if r not in have), key=lambda r: (-held[r], -r))
        return self._in_scope(db, best, limit)

    # ------------------------------------------------------------ ManagedMemory

    async def list_memories(self, *, limit: int = 50, offset: int = 0) -> list[MemoryRecord]:
        """This scope's memories, most recently written first."""
        return await self._call(self._list, limit, offset)  # type: ignore[no-any-return]

    def _list(self, db: sqlite3.Connection, limit: int, offset: int) -> list[MemoryRecord]:
        rows = db.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE scope = ? "
            "ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?",
            (self.scope, max(limit, 0), max(offset, 0)),
        ).fetchall()
        return [_record(row) for row in rows]

    async def count(self) -> int:
        """How many memories this scope holds."""
        return await self._call(self._count)  # type: ignore[no-any-return]

    def _count(self, db: sqlite3.Connection) -> int:
        row = db.execute("SELECT count(*) FROM memories WHERE scope = ?", (self.scope,)).fetchone()
        return int(row[0])

    async def forget(self, memory_ids: Sequence[str]) -> int:
        """Delete memories of this scope by id or unique id prefix; return how many."""
        wanted = check_ids(memory_ids)
        if not wanted:
            return 0
        return await self._call(self._forget, wanted)  # type: ignore[no-any-return]

    def _forget(self, db: sqlite3.Connection, wanted: list[str]) -> int:
        with db:
            found: list[str] = []
            for text in wanted:
                pattern = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                rows = db.execute(
                    "SELECT memory_id FROM memories WHERE scope = ? AND memory_id LIKE ? "
                    "ESCAPE '\\' LIMIT 2",
                    (self.scope, pattern + "%"),
                ).fetchall()
                if len(rows) > 1:
                    raise MemoryStoreError(
                        f"memory id prefix {text!r} matches more than one memory; give more "
                        "characters of the id"
                    )
                if not rows:
                    raise MemoryStoreError(
                        f"no memory {text!r} in this scope ({self.scope_name}); "
                        "avo memory list shows the ids"
                    )
                found.append(rows[0][0])
            db.executemany(
                "DELETE FROM memories WHERE memory_id = ?", [(memory_id,) for memory_id in found]
            )
        return len(set(found))


def open_sqlite_memory(
    settings: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    workspace: str,
    scope: str = "workspace",
) -> SQLiteMemory:
    """The ``sqlite`` memory plugin's factory."""
    parsed = SQLiteMemorySettings.model_validate(dict(settings))
    if parsed.path:
        path = Path(parsed.path).expanduser()
        if not path.is_absolute():
            path = Path(workspace) / path
    else:
        path = default_directory(environ) / "memory.db"
    return SQLiteMemory(path, scope=scope, workspace=workspace, settings=parsed, environ=environ)


__all__ = ["SCHEMA", "SQLiteMemory", "match_expression", "open_sqlite_memory"]
