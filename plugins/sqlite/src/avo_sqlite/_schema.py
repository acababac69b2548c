"""Opening an avo SQLite file: identity and version checks, pragmas, tables.

Keys: a run has an integer ``run_key`` (AUTOINCREMENT, never reused); an
event's rowid is ``run_key << 32 | sequence``, a checkpoint's
``run_key << 32 | position`` and a checkpoint item's ``run_key << 32 | n``
(numbered in the order written), so a run's events, checkpoints and items are
each one contiguous rowid range with no second index, and rows stay in rowid
tables (large payloads are stored in place, not in mostly-empty overflow pages
as WITHOUT ROWID tables would).
Event and checkpoint ids that are canonical UUIDs are stored as 16-byte blobs
and event types as one-byte codes (see ``_codec``).

One schema serves every avo-sqlite store (event store, checkpoint store,
ledger, conversations), so they can share one ``avo.db``. Opening never
changes a file it refuses: the checks (readable SQLite, an avo file or an
empty one, a schema version this code understands) run before anything is
written, including the switch to WAL mode.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

from avo.exceptions import StorageError
from avo.private_files import create_private_file

APPLICATION_ID = 0x41564F31  # "AVO1" in the SQLite header's application_id field
SCHEMA_VERSION = 2
"""The schema this code writes (``PRAGMA user_version``); newer files are refused.

2: event payloads may be stored in the short forms of ``_payloads``, and
checkpoint items are numbered per run (rowid ``run_key << 32 | n``, no index).
A version 1 file's items are renumbered when it is opened and the file is
marked 2, so an older avo-sqlite refuses it from then on instead of misreading
it."""

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
BUSY_TIMEOUT_MS = 10_000
"""How long a write waits for another connection's write lock before failing."""


_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    run_key INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    state TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_at);
CREATE TABLE IF NOT EXISTS events (
    event_key INTEGER PRIMARY KEY,
    event_id NOT NULL,
    event_type NOT NULL,
    created_us INTEGER NOT NULL,
    payload TEXT NOT NULL,
    parent_event_id TEXT
);
CREATE TABLE IF NOT EXISTS checkpoints (
    checkpoint_key INTEGER PRIMARY KEY,
    checkpoint_id NOT NULL,
    created_us INTEGER NOT NULL,
    head TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoint_items (
    run_key INTEGER NOT NULL,
    field TEXT NOT NULL,
    base INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    run_id TEXT PRIMARY KEY,
    owner TEXT,
    token INTEGER NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    model TEXT,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_by_run ON ledger_entries (run_id);
CREATE TABLE IF NOT EXISTS ledger_sync (
    run_id TEXT PRIMARY KEY,
    synced_through INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS job_checkpoints (
    run_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    step INTEGER NOT NULL,
    state_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, sequence)
);
CREATE TABLE IF NOT EXISTS conversation_turns (
    session_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
);
"""

KNOWN_TABLES = frozenset(
    {
        "runs",
        "events",
        "checkpoints",
        "checkpoint_items",
        "leases",
        "ledger_entries",
        "ledger_sync",
        "job_checkpoints",
        "conversation_turns",
        "sqlite_sequence",
    }
)


def _not_sqlite(path: Path) -> StorageError:
    return StorageError(
        f"{path} is not a SQLite database (the file is corrupt or of another kind); "
        "point --database at an avo store or at a new file"
    )


class Opened(NamedTuple):
    """An open avo database: the connection, and why it is read-only (None: writable)."""

    conn: sqlite3.Connection
    read_only: str | None


_READONLY = 8  # SQLITE_READONLY (its extended codes share the low byte)
_CANTOPEN = 14  # SQLITE_CANTOPEN: e.g. a WAL file's -shm cannot be created
_NOTADB = 26  # SQLITE_NOTADB: the file is not a SQLite database


def open_database(
    path: str | Path,
    *,
    synchronous: str = "NORMAL",
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
) -> Opened:
    """Open (creating if needed) the avo SQLite file at ``path``.

    Raises :class:`StorageError` for a corrupt or foreign file and for a schema
    newer than :data:`SCHEMA_VERSION`; the file is left untouched in each case.
    A file that exists but cannot be written (its permissions, a read-only
    directory or filesystem) is opened read-only: ``Opened.read_only`` says
    why, and writes must be refused with :func:`read_only_error`.
    """
    path = Path(path)
    mode = synchronous.upper()
    if mode not in SYNCHRONOUS_MODES:
        raise StorageError(
            f"unknown SQLite synchronous mode {synchronous!r}; "
            f"use one of {', '.join(SYNCHRONOUS_MODES)}"
        )
    exists = path.exists() and path.stat().st_size > 0
    # A foreign file is refused by SQLite itself (SQLITE_NOTADB, below), never by
    # reading the file with open()/close() here: closing any descriptor of a file
    # drops every POSIX lock this process holds on it, including the locks of
    # connections already open to it (a store and a ledger on one avo.db), and
    # another process can then checkpoint over pages they still use.
    if not exists and not path.parent.exists():
        raise StorageError(f"cannot create the avo database {path}: {path.parent} does not exist")
    if not exists:
        # Owner-only: runs hold prompts and tool outputs. SQLite gives the -wal and
        # -shm files it creates the database file's mode.
        try:
            create_private_file(path)
        except OSError as exc:
            raise StorageError(f"cannot create the avo database {path}: {exc}") from exc
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open the avo database {path}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        _check_identity(conn, path)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {mode}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check under the write lock: another process may have migrated meanwhile.
            _check_identity(conn, path)
            for statement in _DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            _number_checkpoint_items(conn)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except StorageError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        if exists and getattr(exc, "sqlite_errorcode", 0) & 0xFF == _NOTADB:
            raise _not_sqlite(path) from None
        reason = _why_read_only(path, exc) if exists else None
        if reason is not None:
            return Opened(_open_read_only(path, reason, busy_timeout_ms), reason)
        raise open_error(path, exc) from exc
    return Opened(conn, None)


def open_error(path: Path, exc: sqlite3.Error) -> StorageError:
    """The StorageError for a file SQLite could not open (corrupt only when SQLite says so)."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB
        return StorageError(f"cannot open the avo database {path}: {exc} (the file is corrupt)")
    return StorageError(f"cannot open the avo database {path}: {exc}")


def read_only_error(path: Path, reason: str, action: str) -> StorageError:
    """The refusal of a write to a database opened read-only."""
    return StorageError(
        f"the avo database {path} is read-only ({reason}), so avo cannot write to it while "
        f"{action}; its runs can still be listed and inspected. Make it writable, or copy "
        "it somewhere writable and use the copy"
    )


def _why_read_only(path: Path, exc: sqlite3.Error) -> str | None:
    """Why writing ``path`` failed, when it is because it cannot be written (else None)."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code not in (_READONLY, _CANTOPEN):
        return None
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "its filesystem is mounted read-only"
    except OSError:
        pass
    if not os.access(path, os.W_OK):
        return "the file's permissions do not allow writing"
    if not os.access(path.parent, os.W_OK):
        return f"its directory {path.parent} is not writable"
    return "SQLite refused to write it" if code == _READONLY else None


def _open_read_only(path: Path, reason: str, busy_timeout_ms: int) -> sqlite3.Connection:
    """A read-only connection; immutable only where nobody can be writing the file."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    attempts = [uri]
    wal = path.with_name(path.name + "-wal")
    unflushed = wal.exists() and wal.stat().st_size > 0
    if not unflushed:
        # A WAL-mode file needs its -shm file, which a read-only directory cannot hold;
        # with no -wal content there is nothing a writer left behind to miss.
        attempts.append(uri + "&immutable=1")
    last: sqlite3.Error | None = None
    for attempt in attempts:
        try:
            conn = sqlite3.connect(
                attempt, uri=True, isolation_level=None, check_same_thread=False, timeout=30
            )
        except sqlite3.Error as exc:
            last = exc
            continue
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            _check_identity(conn, path)
            _check_readable_as_is(conn, path, reason)
            return conn
        except StorageError:
            conn.close()
            raise
        except sqlite3.Error as exc:
            conn.close()
            last = exc
    assert last is not None
    raise StorageError(
        f"cannot read the avo database {path}: it is read-only ({reason}) and SQLite could "
        f"not open it for reading: {last}"
        + (
            f"; its write-ahead log {wal.name} holds writes that need a writable directory"
            if unflushed
            else ""
        )
    ) from last


def _check_readable_as_is(conn: sqlite3.Connection, path: Path, reason: str) -> None:
    """Refuse a read-only file that opening would have had to upgrade first."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if version != SCHEMA_VERSION or not {"runs", "events", "checkpoints"} <= tables:
        raise StorageError(
            f"the avo database {path} is read-only ({reason}) and uses schema version "
            f"{version}, which this avo-sqlite ({SCHEMA_VERSION}) must upgrade before reading "
            "it; open it once where it is writable"
        )


def _number_checkpoint_items(conn: sqlite3.Connection) -> None:
    """Move a schema 1 file's checkpoint items to per-run rowids and drop their index.

    Schema 1 numbered items globally (below 2**32) and found them through the
    index ``checkpoint_items_key``; since schema 2 an item's rowid is
    ``run_key << 32 | number`` in the order written, so a save appends to one
    page and a run's items are one rowid range. The move keeps each run's order.
    """
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'checkpoint_items_key'"
    ).fetchone()
    if found is None:
        return
    conn.execute(
        "UPDATE checkpoint_items SET rowid = (run_key << 32) | rowid WHERE rowid < (1 << 32)"
    )
    conn.execute("DROP INDEX checkpoint_items_key")


def _check_identity(conn: sqlite3.Connection, path: Path) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables - KNOWN_TABLES):
        foreign = ", ".join(sorted(tables - KNOWN_TABLES)) or f"application_id {app_id}"
        raise StorageError(
            f"{path} is a SQLite database of another application ({foreign}), not an avo store; "
            "point --database at an avo store or at a new file"
        )
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"{path} uses avo-sqlite schema version {version}, newer than this avo-sqlite "
            f"understands (up to {SCHEMA_VERSION}); upgrade avo-sqlite to open it"
        )


def translate(exc: sqlite3.Error, path: Path | str, action: str) -> StorageError:
    """Turn a sqlite3 error into a StorageError naming the file and the action."""
    return StorageError(f"SQLite error while {action} in {path}: {exc}")
