"""Run heads for SQLiteCore (a mixin): the ``runs`` row, written now or with the commit.

Listed before ReadOps and RetentionOps among SQLiteCore's bases: they declare
``_sync_runs`` as a stub that this class implements.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from avo.exceptions import RunNotFoundError
from avo.models import RunRecord
from avo.storage.text import record_json


class HeadOps:
    """Writes of a run's head row (see ``_core``)."""

    conn: sqlite3.Connection
    _keys: dict[str, int]
    _created: dict[str, datetime]  # runs.created_at as last written or read here
    _pending_runs: dict[str, RunRecord]

    def _sync_runs(self) -> None:
        """Write the deferred run records (inside the open transaction)."""
        if self._pending_runs:
            for run in self._pending_runs.values():
                self._update_head(run)
            self._pending_runs.clear()

    def _update_head(self, run: RunRecord) -> None:
        """UPDATE a run's row; raises RunNotFoundError if there is none.

        ``created_at`` is written only when it differs from what this store last
        wrote or read: leaving it out leaves the ``runs_by_created`` index (one
        page a commit) untouched, and the runtime never changes it.
        """
        key = self._keys.get(run.run_id)
        if key is not None and self._created.get(run.run_id) == run.created_at:
            cursor = self.conn.execute(
                "UPDATE runs SET updated_at = ?, state = ?, record = ? WHERE run_key = ?",
                (*head_params(run), key),
            )
        else:
            cursor = self.conn.execute(
                "UPDATE runs SET created_at = ?, updated_at = ?, state = ?, record = ?"
                " WHERE run_id = ?",
                (run.created_at.isoformat(), *head_params(run), run.run_id),
            )
        if cursor.rowcount == 0:
            raise RunNotFoundError(f"run {run.run_id} does not exist", run_id=run.run_id)
        self._created[run.run_id] = run.created_at

    def _put_run(self, run: RunRecord, *, insert: bool, defer: bool = False) -> None:
        if defer:  # the run exists: the event just appended to it validated
            self._pending_runs[run.run_id] = run
            return
        self._pending_runs.pop(run.run_id, None)  # superseded by this write
        if insert:
            cursor = self.conn.execute(
                "INSERT INTO runs (created_at, updated_at, state, record, run_id)"
                " VALUES (?, ?, ?, ?, ?)",
                (run.created_at.isoformat(), *head_params(run), run.run_id),
            )
            self._keys[run.run_id] = int(cursor.lastrowid or 0)
            self._created[run.run_id] = run.created_at
            return
        self._update_head(run)


def head_params(run: RunRecord) -> tuple[str, str, str]:
    """The columns a run's head changes: ``updated_at``, ``state``, ``record``."""
    return run.updated_at.isoformat(), run.state.value, record_json(run)


__all__ = ["HeadOps", "head_params"]
