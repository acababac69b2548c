"""Retention for SQLiteCore (a mixin): delete a finished run in one transaction."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from datetime import datetime

from avo.exceptions import StorageError
from avo.state import RunState, is_terminal
from avo_sqlite._codec import key_range


class RetentionOps:
    """``delete_run`` on SQLiteCore's connection (see ``_core``)."""

    _keys: dict[str, int]
    _created: dict[str, datetime]

    def _write(
        self, run_id: str, action: str, *, barrier: bool
    ) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # SQLiteCore's

    def _sync_runs(self) -> None:
        raise NotImplementedError  # SQLiteCore's

    def _key(self, run_id: str, *, refresh: bool = False) -> int | None:
        raise NotImplementedError  # SQLiteCore's

    def _forget(self, run_id: str) -> None:
        raise NotImplementedError  # SQLiteCore's

    def delete_run(self, run_id: str) -> bool:
        with self._write(run_id, "deleting a run", barrier=True) as conn:
            self._sync_runs()
            row = conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                return False
            if not is_terminal(RunState(row[0])):
                raise StorageError(
                    f"run {run_id} is {row[0]}, not finished; only terminal runs can be deleted"
                )
            key = self._key(run_id, refresh=True)
            assert key is not None
            low, high = key_range(key)
            conn.execute("DELETE FROM events WHERE event_key BETWEEN ? AND ?", (low, high))
            conn.execute(
                "DELETE FROM checkpoints WHERE checkpoint_key BETWEEN ? AND ?", (low, high)
            )
            conn.execute("DELETE FROM checkpoint_items WHERE rowid BETWEEN ? AND ?", (low, high))
            for table in ("leases", "ledger_entries", "ledger_sync", "job_checkpoints", "runs"):
                conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
        self._forget(run_id)
        self._keys.pop(run_id, None)
        self._created.pop(run_id, None)
        return True


__all__ = ["RetentionOps"]
