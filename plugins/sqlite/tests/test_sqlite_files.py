"""Opening files that are not (or not yet) ours: clear StorageError, nothing altered."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from avo.exceptions import StorageError
from avo.testing.stores import start_run
from avo_sqlite import SQLiteEventStore
from avo_sqlite._schema import APPLICATION_ID, SCHEMA_VERSION


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


def _refuses(path: Path, *fragments: str) -> None:
    before, names = _digest(path), _siblings(path)
    with pytest.raises(StorageError) as info:
        SQLiteEventStore(path)
    for fragment in fragments:
        assert fragment in str(info.value)
    assert _digest(path) == before
    assert _siblings(path) <= names | {path.name + "-journal"}


def test_a_text_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n")
    _refuses(path, "is not a SQLite database", str(path))


def test_a_corrupt_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, record TEXT)")
    conn.executemany("INSERT INTO runs VALUES (?, ?)", [(str(i), "x" * 500) for i in range(200)])
    conn.commit()
    conn.close()
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # wreck the schema page after the header
    path.write_bytes(bytes(data))
    _refuses(path, "corrupt")


def test_a_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('ada')")
    conn.commit()
    conn.close()
    _refuses(path, "another application", "customers")
    rows = sqlite3.connect(path).execute("SELECT name FROM customers").fetchall()
    assert rows == [("ada",)]


def test_a_foreign_application_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1234")
    conn.execute("CREATE TABLE runs (x)")
    conn.commit()
    conn.close()
    _refuses(path, "another application", "application_id 1234")


async def test_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_id = await start_run(store)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    _refuses(path, f"schema version {SCHEMA_VERSION + 1}", "upgrade avo-sqlite")
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    conn.close()
    async with SQLiteEventStore(path) as store:
        assert len(await store.get_events(run_id)) == 4


async def test_a_new_file_gets_identity_version_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    async with SQLiteEventStore(path):
        pass
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_missing_directory_is_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="does not exist"):
        SQLiteEventStore(tmp_path / "nope" / "avo.db")


def test_bad_synchronous_mode_names_the_choices(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="NORMAL, FULL"):
        SQLiteEventStore(tmp_path / "avo.db", synchronous="sometimes")


async def test_closed_store_says_so(tmp_path: Path) -> None:
    store = SQLiteEventStore(tmp_path / "avo.db")
    await store.close()
    await store.close()
    with pytest.raises(StorageError, match="closed"):
        await store.list_runs()


async def test_sqlite_url_and_plugin_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from avo_sqlite.plugin import sqlite as plugin

    (spec,) = plugin.specs
    assert spec.name == "sqlite" and spec.schemes == ("sqlite",)
    assert ".db" in spec.suffixes
    monkeypatch.chdir(tmp_path)
    store = spec.factory("sqlite:///rel.db", {"synchronous": "FULL"})
    try:
        await start_run(store)
    finally:
        await store.close()
    assert (tmp_path / "rel.db").exists()
    absolute = tmp_path / "abs.db"
    store = spec.factory(f"sqlite:///{absolute}", {})
    await store.close()
    assert absolute.exists()


async def test_undecodable_rows_are_a_storage_error(tmp_path: Path) -> None:
    """Rows this build cannot decode (another build, a hand edit) give StorageError."""
    import sqlite3

    from avo import AgentRuntime, FakeProvider, ModelResponse
    from avo.exceptions import StorageError
    from avo_sqlite import SQLiteEventStore

    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        result = await AgentRuntime(
            provider=FakeProvider([ModelResponse(content="done")]), event_store=store
        ).run("t")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET event_type = 999")
    conn.execute('UPDATE runs SET record = \'{"not": "a run"}\'')
    conn.commit()
    conn.close()
    async with SQLiteEventStore(path) as store:
        with pytest.raises(StorageError, match="cannot be read while reading events"):
            await store.get_events(result.run_id)
        with pytest.raises(StorageError, match="cannot be read while listing runs"):
            await store.list_runs()


async def test_a_schema_1_file_is_upgraded_in_place(tmp_path: Path) -> None:
    """Schema 1 numbered checkpoint items globally behind an index and stored payloads
    as plain JSON: such a file opens, reads the same, and keeps working as schema 2."""
    from avo.state import RunState
    from avo.testing.store_values import checkpoint, checkpointed, moved

    path = tmp_path / "old.db"
    async with SQLiteEventStore(path, commit_delay=0) as store:
        run_id = await start_run(store)
        first = checkpoint(run_id, messages=[{"role": "user", "content": "a"}])
        await store.save_checkpoint(first, checkpointed(run_id, first))
        events = await store.get_events(run_id)
    conn = sqlite3.connect(path, isolation_level=None)
    # back to the schema 1 layout: small global item rowids, the index, JSON payloads
    conn.execute("UPDATE checkpoint_items SET rowid = rowid & 4294967295")
    conn.execute(
        "CREATE UNIQUE INDEX checkpoint_items_key ON checkpoint_items (run_key, field, base, idx)"
    )
    rows = conn.execute("SELECT event_key, payload FROM events").fetchall()
    for key, text in rows:
        if not text.startswith("{"):
            plain = next(e for e in events if e.sequence == key & 4294967295).payload
            conn.execute(
                "UPDATE events SET payload = ? WHERE event_key = ?",
                (json.dumps(plain, separators=(",", ":")), key),
            )
    conn.execute("PRAGMA user_version = 1")
    conn.close()

    async with SQLiteEventStore(path, commit_delay=0) as store:
        assert await store.get_events(run_id) == events
        assert await store.get_latest_checkpoint(run_id) == first
        second = checkpoint(
            run_id,
            state=RunState.TOOL_PENDING,
            messages=[*first.messages, {"role": "assistant", "content": "b"}],
        )
        await store.append_event(moved(run_id, RunState.DECISION_RECEIVED, RunState.TOOL_PENDING))
        await store.save_checkpoint(second, checkpointed(run_id, second))
    async with SQLiteEventStore(path) as store:
        assert await store.get_latest_checkpoint(run_id) == second
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "checkpoint_items_key" not in indexes
    assert conn.execute("SELECT MIN(rowid) FROM checkpoint_items").fetchone()[0] >= 1 << 32
    conn.close()
