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

_UPDATE_FROM = sqlite3.sqlite_version_info >= (3, 33, 0)  # UPDATE ... FROM


class HeadOps:
    """Writes of a run's head row (see ``_core``)."""

    conn: sqlite3.Connection
    _keys: dict[str, int]
    _created: dict[str, datetime]  # runs.created_at as last written or read here
    _pending_runs: dict[str, RunRecord]

    def _sync_runs(self) -> None:
        """Write the deferred run records (inside the open transaction).

        Several at once in one statement (one step of SQLite, see
        ``_txn.insert_rows``) when their keys are known and ``created_at`` is
        unchanged, which is the rule; the others one by one.
        """
        pending = self._pending_runs
        if not pending:
            return
        if len(pending) > 1 and _UPDATE_FROM:
            keys, created = self._keys, self._created
            bulk: list[RunRecord] = []
            single: list[RunRecord] = []
            for run in pending.values():
                key = keys.get(run.run_id)
                if key is not None and created.get(run.run_id) == run.created_at:
                    bulk.append(run)
                else:
                    single.append(run)
            for start in range(0, len(bulk), 64):
                chunk = bulk[start : start + 64]
                params = [v for run in chunk for v in (keys[run.run_id], *head_params(run))]
                values = ", ".join(["(?, ?, ?, ?)"] * len(chunk))
                cursor = self.conn.execute(
                    "UPDATE runs SET updated_at = v.column2, state = v.column3, record = v.column4"
                    f" FROM (VALUES {values}) AS v WHERE runs.run_key = v.column1",
                    params,
                )
                if cursor.rowcount != len(chunk):  # a run is gone: name it
                    single.extend(chunk)
            for run in single:
                self._update_head(run)
        else:
            for run in pending.values():
                self._update_head(run)
        pending.clear()

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
