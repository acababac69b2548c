"""The side stores, sharing one file with the event store."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from avo.exceptions import AvoError, StorageError
from avo.models import TokenUsage
from avo.testing.stores import finish_run, start_run
from avo_sqlite import (
    CheckpointError,
    CheckpointStore,
    ConversationStore,
    HistoryError,
    SQLiteEventStore,
    TokenLedger,
)


def test_checkpoint_store_saves_latest_history_truncate(tmp_path: Path) -> None:
    with CheckpointStore(tmp_path / "avo.db") as store:
        assert store.latest("r") is None
        first = store.save("r", step=1, state={"todo": ["a"], "ü": 1})
        second = store.save("r", step=2, state={"todo": []})
        store.save("other", step=7, state={})
        assert (first.sequence, second.sequence) == (1, 2)
        latest = store.latest("r")
        assert latest is not None and latest.state == {"todo": []} and latest.step == 2
        assert [c.step for c in store.history("r")] == [1, 2]
        assert store.history("r")[0].state == {"todo": ["a"], "ü": 1}
        assert store.truncate("r", keep_last=1) == 1
        assert [c.sequence for c in store.history("r")] == [2]
        assert store.save("r", step=3, state={}).sequence == 3
        assert [c.run_id for c in store.history("other")] == ["other"]
        with pytest.raises(CheckpointError, match="not JSON"):
            store.save("r", step=4, state={"bad": object()})  # type: ignore[dict-item]
        with pytest.raises(CheckpointError, match="keep_last"):
            store.truncate("r", keep_last=-1)


def test_ledger_records_and_aggregates(tmp_path: Path) -> None:
    with TokenLedger(tmp_path / "avo.db") as ledger:
        a = ledger.record(
            "r1",
            step=1,
            usage=TokenUsage(input_tokens=10, output_tokens=2),
            model="m1",
            cost_usd=Decimal("0.0012"),
        )
        ledger.record("r1", step=2, usage=TokenUsage(input_tokens=5, output_tokens=5), model="m2")
        ledger.record(
            "r2", step=1, usage=TokenUsage(input_tokens=1), model="m1", cost_usd=Decimal("0.5")
        )
        assert a.id >= 1 and a.cost_usd == Decimal("0.0012")
        assert [e.step for e in ledger.entries("r1")] == [1, 2]
        assert ledger.total("r1") == TokenUsage(input_tokens=15, output_tokens=7)
        assert ledger.total() == TokenUsage(input_tokens=16, output_tokens=7)
        assert ledger.cost_total("r1") == Decimal("0.0012")
        assert ledger.cost_total() == Decimal("0.5012")
        assert ledger.by_model() == {
            "m1": TokenUsage(input_tokens=11, output_tokens=2),
            "m2": TokenUsage(input_tokens=5, output_tokens=5),
        }
        assert ledger.run_ids() == ["r1", "r2"]
        assert ledger.truncate("r1") == 2
        assert ledger.entries("r1") == [] and ledger.cost_total("r1") is None
        with pytest.raises(StorageError, match="cost_usd"):
            ledger.record("r", step=1, usage=TokenUsage(), cost_usd=Decimal("-1"))


def test_conversations_append_search_truncate(tmp_path: Path) -> None:
    with ConversationStore(tmp_path / "avo.db") as store:
        store.append("s1", role="user", content="Find the 100% bug_fix please")
        store.append("s1", role="assistant", content="Looking at the BUG now", metadata={"k": 1})
        store.append("s2", role="user", content="unrelated")
        assert [t.sequence for t in store.turns("s1")] == [1, 2]
        assert store.turns("s1")[1].metadata == {"k": 1}
        assert [t.content for t in store.turns("s1", limit=1)] == ["Looking at the BUG now"]
        last = store.last_turn("s1")
        assert last is not None and last.role == "assistant"
        assert store.last_turn("nope") is None
        assert set(store.sessions()) == {"s1", "s2"}
        found = store.search_turns("bug")
        assert [t.sequence for t in found] == [2, 1]
        assert [t.role for t in store.search_turns("bug", role="user")] == ["user"]
        assert [t.content for t in store.search_turns("100%")] == ["Find the 100% bug_fix please"]
        assert store.search_turns("g_f") and not store.search_turns("gxf")
        assert store.search_turns("bug", session_id="s2") == []
        assert store.truncate("s1", keep_last=1) == 1
        assert [t.sequence for t in store.turns("s1")] == [2]
        with pytest.raises(HistoryError, match="role"):
            store.append("s1", role="", content="x")
        with pytest.raises(HistoryError, match="non-empty"):
            store.search_turns("")
    assert issubclass(HistoryError, AvoError)


async def test_side_stores_share_the_event_store_file_and_gc(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as events:
        run_id = await start_run(events)
        with TokenLedger(path) as ledger, CheckpointStore(path) as jobs:
            ledger.record(run_id, step=1, usage=TokenUsage(input_tokens=3))
            jobs.save(run_id, step=1, state={"x": 1})
            await finish_run(events, run_id)
            assert await events.delete_run(run_id) is True
            assert ledger.entries(run_id) == []
            assert jobs.history(run_id) == []


def test_side_store_refuses_a_foreign_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("hello")
    with pytest.raises(HistoryError, match="not a SQLite database"):
        ConversationStore(path)
    with pytest.raises(CheckpointError):
        CheckpointStore(path)
    with pytest.raises(StorageError):
        TokenLedger(path)
