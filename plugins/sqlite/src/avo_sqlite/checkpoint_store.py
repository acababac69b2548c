"""CheckpointStore: the run-level (REPL/job) checkpoint store.

Separate from the runtime's :class:`avo.models.Checkpoint`: a job saves an
arbitrary JSON state per step and reads back the latest or the history. Rows
live in the table ``job_checkpoints`` so this store can share ``avo.db`` with
the event store (whose checkpoint heads use ``checkpoints``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from pydantic import JsonValue

from avo.exceptions import StorageError
from avo.models import utc_now
from avo_sqlite._sync import SyncSQLiteStore


class CheckpointError(StorageError):
    """The checkpoint store failed or was given a bad value."""


@dataclass
class Checkpoint:
    """One saved job state (distinct from avo.models.Checkpoint)."""

    run_id: str
    sequence: int
    step: int
    state: dict[str, JsonValue]
    created_at: datetime


class CheckpointStore(SyncSQLiteStore):
    """Per-run, per-step JSON state snapshots in SQLite."""

    error = CheckpointError

    def save(self, run_id: str, *, step: int, state: dict[str, JsonValue]) -> Checkpoint:
        """Append a checkpoint for ``run_id``; sequences ascend from 1 per run."""
        if not run_id:
            raise CheckpointError("run_id must be a non-empty string")
        if step < 0:
            raise CheckpointError(f"step must be >= 0, got {step}")
        try:
            encoded = json.dumps(state, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint state for run {run_id} is not JSON: {exc}") from exc
        created = utc_now()
        sequence = self._insert_numbered(
            "saving a checkpoint",
            "job_checkpoints",
            "run_id",
            {
                "run_id": run_id,
                "step": step,
                "state_json": encoded,
                "created_at": created.isoformat(),
            },
        )
        return Checkpoint(run_id, sequence, step, json.loads(encoded), created)

    def latest(self, run_id: str) -> Checkpoint | None:
        """The newest checkpoint of ``run_id``, or None."""
        rows = self._query(
            "reading a checkpoint",
            "SELECT run_id, sequence, step, state_json, created_at FROM job_checkpoints"
            " WHERE run_id = ? ORDER BY sequence DESC LIMIT 1",
            (run_id,),
        )
        return _row(rows[0]) if rows else None

    def history(self, run_id: str) -> list[Checkpoint]:
        """Every checkpoint of ``run_id``, oldest first."""
        rows = self._query(
            "reading checkpoints",
            "SELECT run_id, sequence, step, state_json, created_at FROM job_checkpoints"
            " WHERE run_id = ? ORDER BY sequence",
            (run_id,),
        )
        return [_row(row) for row in rows]

    def truncate(self, run_id: str, *, keep_last: int = 0) -> int:
        """Delete all but the newest ``keep_last`` checkpoints of ``run_id``; returns how many."""
        return self._truncate_keep_last(
            "truncating checkpoints", "job_checkpoints", "run_id", run_id, keep_last
        )


def _row(row: tuple) -> Checkpoint:  # type: ignore[type-arg]
    return Checkpoint(
        run_id=row[0],
        sequence=int(row[1]),
        step=int(row[2]),
        state=json.loads(row[3]),
        created_at=datetime.fromisoformat(row[4]),
    )


__all__ = ["Checkpoint", "CheckpointError", "CheckpointStore"]
