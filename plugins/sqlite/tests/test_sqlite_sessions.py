"""SQLite specifics of sessions and shaper state (the rest is in the conformance suite)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from avo.testing.store_values import checkpoint, checkpointed, start_run
from avo_sqlite import SQLiteEventStore


async def test_session_tables_appear_on_first_use(tmp_path: Path) -> None:
    db = tmp_path / "avo.db"
    store = SQLiteEventStore(db)
    try:
        await start_run(store)
        await store.flush()
        with sqlite3.connect(db) as conn:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "sessions" not in names  # a run outside sessions creates nothing
        await store.create_session("s1", title="t")
        with sqlite3.connect(db) as conn:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert {"sessions", "session_runs"} <= names
    finally:
        await store.close()


async def test_unchanged_shaper_state_is_stored_once(tmp_path: Path) -> None:
    db = tmp_path / "avo.db"
    store = SQLiteEventStore(db, commit_delay=0)
    state = {"compaction": {"summary": {"text": "s" * 2000, "start": 1, "stop": 9}}}
    try:
        run_id = await start_run(store)
        for step in range(2, 6):
            cp = checkpoint(run_id, next_step=step).model_copy(update={"shaper_state": state})
            await store.save_checkpoint(cp, checkpointed(run_id, cp))
        loaded = await store.get_latest_checkpoint(run_id)
        assert loaded is not None and loaded.shaper_state == state
    finally:
        await store.close()
    with sqlite3.connect(db) as conn:
        heads = [json.loads(r[0]) for r in conn.execute("SELECT head FROM checkpoints")]
        summaries = conn.execute(
            "SELECT COUNT(*) FROM checkpoint_items WHERE value LIKE ?", ("%" + "s" * 2000 + "%",)
        ).fetchone()[0]
    assert all("shaper_state" not in head for head in heads)  # kept as a part, by reference
    assert summaries == 1


async def test_a_head_with_inline_shaper_state_still_loads(tmp_path: Path) -> None:
    db = tmp_path / "avo.db"
    store = SQLiteEventStore(db, commit_delay=0)
    try:
        run_id = await start_run(store)
        cp = checkpoint(run_id).model_copy(update={"shaper_state": {"p": {"n": 1}}})
        await store.save_checkpoint(cp, checkpointed(run_id, cp))
    finally:
        await store.close()
    with sqlite3.connect(db) as conn:  # rewrite the head the way an older avo-sqlite wrote it
        (key, text) = conn.execute("SELECT checkpoint_key, head FROM checkpoints").fetchone()
        head = json.loads(text)
        head["parts"].pop("shaper_state")
        head["shaper_state"] = {"p": {"n": 1}}
        conn.execute(
            "UPDATE checkpoints SET head = ? WHERE checkpoint_key = ?", (json.dumps(head), key)
        )
    again = SQLiteEventStore(db)
    try:
        loaded = await again.get_latest_checkpoint(run_id)
        assert loaded is not None and loaded.shaper_state == {"p": {"n": 1}}
    finally:
        await again.close()
