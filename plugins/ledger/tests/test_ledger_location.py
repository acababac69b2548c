"""The ledger hook writes beside the run's own SQLite store unless told otherwise."""

from __future__ import annotations

from pathlib import Path

from avo_ledger.plugin import LedgerHooks


def _ledger_file(hooks: LedgerHooks) -> Path:
    assert hooks.recorder is not None
    return Path(hooks.recorder.ledger.path)


def test_ledger_follows_the_sqlite_store(tmp_path: Path) -> None:
    hooks = LedgerHooks()
    store = tmp_path / "runs.db"
    hooks._factory(
        {}, environ={"AVO_DATABASE_PATH": str(tmp_path / "env.db")}, store_location=str(store)
    )
    assert _ledger_file(hooks) == store
    hooks.disable()


def test_explicit_database_wins_and_other_stores_fall_back(tmp_path: Path) -> None:
    hooks = LedgerHooks()
    chosen = tmp_path / "ledger.db"
    hooks._factory({"database": str(chosen)}, environ={}, store_location=str(tmp_path / "x.db"))
    assert _ledger_file(hooks) == chosen
    env_db = tmp_path / "env.db"
    hooks._factory(
        {}, environ={"AVO_DATABASE_PATH": str(env_db)}, store_location="postgresql://u@127.0.0.1/db"
    )
    assert _ledger_file(hooks) == env_db
    hooks.disable()
