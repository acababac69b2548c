"""TokenLedger: one persisted usage record per model call (table ``ledger_entries``).

Besides input and output tokens a row keeps the tokens read from and written to
the vendor's prompt cache, the reasoning tokens, and the provider that answered,
so a report can price cache tokens at their own prices and say what caching
saved. Those columns were added after the table: a file written by an older
avo-sqlite gets them (``ALTER TABLE ... ADD COLUMN``, zero / NULL for the old
rows) the first time a ledger opens it writable; older readers, which name their
columns, keep reading it. A read-only file without them reads as zeros.

A row recorded from an event keeps the event's id and sequence, and a run has at
most one row per event id (a unique index), so recording one event twice, from a
repeated notification or from :meth:`TokenLedger.catch_up`, counts it once.
Rows written before the event id was kept have none (NULL); ``catch_up`` gives
them theirs when it meets their events. ``ledger_sync`` keeps, per run, the
sequence through which the run's log has been checked against the ledger, so
:meth:`TokenLedger.behind` finds the runs of this file whose log went further
with one query.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

from avo.exceptions import StorageError
from avo.models import TokenUsage, utc_now
from avo_sqlite._codec import SEQUENCE_BITS, SEQUENCE_MASK
from avo_sqlite._sync import SyncSQLiteStore

_COLUMNS = "id, run_id, step, model, input_tokens, output_tokens, cost_usd, created_at"
_ADDED = (
    ("cache_read_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("cache_write_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("reasoning_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("provider", "TEXT"),
    ("event_id", "TEXT"),
    ("sequence", "INTEGER"),
)
"""Columns added to ``ledger_entries`` after its first release, with their definitions."""
_TABLE_INFO = "PRAGMA table_info(ledger_entries)"
_BY_EVENT = "CREATE UNIQUE INDEX IF NOT EXISTS ledger_by_event ON ledger_entries (run_id, event_id)"
_INSERT = (
    "INSERT{verb} INTO ledger_entries (run_id, step, model, input_tokens, output_tokens,"
    " cost_usd, created_at, cache_read_tokens, cache_write_tokens, reasoning_tokens,"
    " provider, event_id, sequence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_BEHIND = f"""
SELECT run_id, synced, last FROM (
    SELECT r.run_id AS run_id, r.run_key AS run_key, COALESCE(s.synced_through, 0) AS synced,
        COALESCE((SELECT MAX(e.event_key) FROM events e
                  WHERE e.event_key BETWEEN (r.run_key << {SEQUENCE_BITS})
                  AND ((r.run_key << {SEQUENCE_BITS}) | {SEQUENCE_MASK})), 0)
            & {SEQUENCE_MASK} AS last
    FROM runs r LEFT JOIN ledger_sync s ON s.run_id = r.run_id
) WHERE last > synced ORDER BY run_key
"""
"""The runs of this file whose last event sequence is past what the ledger has checked."""
_SYNCED = (
    "INSERT INTO ledger_sync (run_id, synced_through) VALUES (?, ?) ON CONFLICT (run_id)"
    " DO UPDATE SET synced_through = MAX(synced_through, excluded.synced_through)"
)
_LEGACY = (
    "UPDATE ledger_entries SET event_id = ?, sequence = ? WHERE id = ("
    "SELECT id FROM ledger_entries WHERE run_id = ? AND event_id IS NULL AND step = ?"
    " AND input_tokens = ? AND output_tokens = ? AND model IS ? ORDER BY id LIMIT 1)"
)
"""Give a row written before event ids were kept the id of the event it records."""


@dataclass
class LedgerEntry:
    """One persisted usage record."""

    id: int
    run_id: str
    step: int
    model: str | None
    usage: TokenUsage
    cost_usd: Decimal | None
    created_at: datetime
    provider: str | None = None
    event_id: str | None = None
    sequence: int | None = None


@dataclass(frozen=True)
class EventUsage:
    """What one MODEL_RESPONDED event says a model call used: a ledger row to be."""

    event_id: str
    sequence: int
    step: int
    usage: TokenUsage
    model: str | None = None
    provider: str | None = None
    cost_usd: Decimal | None = None


@dataclass(frozen=True)
class RunBehind:
    """A run whose log goes past what the ledger has checked (``synced_through``)."""

    run_id: str
    synced_through: int
    last_sequence: int


class TokenLedger(SyncSQLiteStore):
    """Token usage and cost per run, step and model; shares ``avo.db`` with the event store.

    ``avo runs gc`` deletes a run's ledger rows with the run.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._select = self._add_columns()

    def _add_columns(self) -> str:
        """Add the newer columns a file lacks; return the SELECT list reading every column."""
        found = {row[1] for row in self._query("reading the ledger", _TABLE_INFO)}
        missing = [(name, kind) for name, kind in _ADDED if name not in found]
        if missing and self._read_only is None:
            with self._tx("adding the ledger's cache and reasoning columns") as conn:
                present = {row[1] for row in conn.execute(_TABLE_INFO)}  # re-read under the lock
                for name, kind in missing:
                    if name not in present:
                        conn.execute(f"ALTER TABLE ledger_entries ADD COLUMN {name} {kind}")
                conn.execute(_BY_EVENT)
            missing = []
        elif self._read_only is None and not self._has_index():
            with self._tx("indexing the ledger by event") as conn:
                conn.execute(_BY_EVENT)
        absent = {name for name, _ in missing}
        extra = [
            ("NULL" if kind == "TEXT" else "0") if name in absent else name for name, kind in _ADDED
        ]
        return ", ".join([_COLUMNS, *extra])

    @property
    def read_only(self) -> str | None:
        """Why the file is open read-only (None: writable)."""
        return self._read_only

    def _has_index(self) -> bool:
        found = self._query(
            "reading the ledger",
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'ledger_by_event'",
        )
        return bool(found)

    def record(
        self,
        run_id: str,
        *,
        step: int,
        usage: TokenUsage,
        model: str | None = None,
        cost_usd: Decimal | None = None,
        provider: str | None = None,
    ) -> LedgerEntry:
        """Persist one usage record (tied to no event) and return it with its id."""
        _check(run_id, step, cost_usd)
        created = utc_now()
        with self._tx("recording usage") as conn:
            values = _values(run_id, step, usage, model, cost_usd, provider, created, None, None)
            entry_id = int(conn.execute(_INSERT.format(verb=""), values).lastrowid or 0)
        return LedgerEntry(entry_id, run_id, step, model, usage, cost_usd, created, provider)

    def record_event(self, run_id: str, row: EventUsage) -> LedgerEntry | None:
        """Persist the usage of one event; None when the run already has a row for it."""
        _check(run_id, row.step, row.cost_usd)
        created = utc_now()
        with self._tx("recording usage") as conn:
            cursor = conn.execute(_INSERT.format(verb=" OR IGNORE"), _row(run_id, row, created))
            if not cursor.rowcount:
                return None
            entry_id = int(cursor.lastrowid or 0)
        return LedgerEntry(
            entry_id,
            run_id,
            row.step,
            row.model,
            row.usage,
            row.cost_usd,
            created,
            row.provider,
            row.event_id,
            row.sequence,
        )

    def behind(self) -> list[RunBehind]:
        """The runs of this file's event store whose log goes past what the ledger checked.

        One query over the ``runs`` table (a rowid seek per run), oldest run first.
        """
        rows = self._query("reading the ledger", _BEHIND)
        return [RunBehind(str(run_id), int(synced), int(last)) for run_id, synced, last in rows]

    def synced_through(self, run_id: str) -> int:
        """The sequence through which ``run_id``'s log has been checked (0: never)."""
        rows = self._query(
            "reading the ledger",
            "SELECT synced_through FROM ledger_sync WHERE run_id = ?",
            (run_id,),
        )
        return int(rows[0][0]) if rows else 0

    def catch_up(self, run_id: str, rows: list[EventUsage], through: int) -> int:
        """Record ``rows`` (the usage events of ``run_id`` up to sequence ``through``) that the
        ledger lacks, and mark the run checked through ``through``; returns how many were new.

        One transaction. A row an older avo-sqlite wrote without an event id, for the
        same step, model and tokens, is given the event's id instead of a second row.
        """
        for row in rows:
            _check(run_id, row.step, row.cost_usd)
        created = utc_now()
        added = 0
        with self._tx("catching the ledger up with the event log") as conn:
            legacy = conn.execute(
                "SELECT 1 FROM ledger_entries WHERE run_id = ? AND event_id IS NULL LIMIT 1",
                (run_id,),
            ).fetchone()
            for row in rows:
                if legacy is not None:
                    params = (row.event_id, row.sequence, run_id, row.step)
                    tokens = (row.usage.input_tokens, row.usage.output_tokens, row.model)
                    if conn.execute(_LEGACY, params + tokens).rowcount:
                        continue
                cursor = conn.execute(_INSERT.format(verb=" OR IGNORE"), _row(run_id, row, created))
                added += cursor.rowcount
            conn.execute(_SYNCED, (run_id, through))
        return added

    def _where(self, run_id: str | None) -> tuple[str, tuple[object, ...]]:
        return ("", ()) if run_id is None else (" WHERE run_id = ?", (run_id,))

    def entries(self, run_id: str | None = None) -> list[LedgerEntry]:
        """Every entry (of one run when given), in recording order."""
        where, params = self._where(run_id)
        rows = self._query(
            "reading the ledger",
            f"SELECT {self._select} FROM ledger_entries{where} ORDER BY id",
            params,
        )
        return [_entry(row) for row in rows]

    def total(self, run_id: str | None = None) -> TokenUsage:
        """Summed usage (of one run when given), cache and reasoning tokens included."""
        total = TokenUsage()
        for entry in self.entries(run_id):
            total = total.plus(entry.usage)
        return total

    def cost_total(self, run_id: str | None = None) -> Decimal | None:
        """Summed cost of the entries that have one; None when none has a cost."""
        costs = [entry.cost_usd for entry in self.entries(run_id) if entry.cost_usd is not None]
        return sum(costs, Decimal(0)) if costs else None

    def by_model(self, run_id: str | None = None) -> dict[str, TokenUsage]:
        """Summed usage per model name (``"unknown"`` for entries without one)."""
        totals: dict[str, TokenUsage] = {}
        for entry in self.entries(run_id):
            name = entry.model or "unknown"
            totals[name] = totals.get(name, TokenUsage()).plus(entry.usage)
        return totals

    def run_ids(self) -> list[str]:
        """Runs that have ledger entries, in order of their first entry."""
        rows = self._query(
            "reading the ledger",
            "SELECT run_id FROM ledger_entries GROUP BY run_id ORDER BY MIN(id)",
        )
        return [row[0] for row in rows]

    def truncate(self, run_id: str | None = None) -> int:
        """Delete the entries (of one run when given); returns how many."""
        where, params = self._where(run_id)
        with self._tx("truncating the ledger") as conn:
            return int(conn.execute(f"DELETE FROM ledger_entries{where}", params).rowcount)


def _check(run_id: str, step: int, cost_usd: Decimal | None) -> None:
    if not run_id:
        raise StorageError("run_id must be a non-empty string")
    if step < 0:
        raise StorageError(f"step must be >= 0, got {step}")
    if cost_usd is not None and (not cost_usd.is_finite() or cost_usd < 0):
        raise StorageError(f"cost_usd must be a finite, non-negative Decimal, got {cost_usd}")


def _values(
    run_id: str,
    step: int,
    usage: TokenUsage,
    model: str | None,
    cost_usd: Decimal | None,
    provider: str | None,
    created: datetime,
    event_id: str | None,
    sequence: int | None,
) -> tuple[object, ...]:
    return (
        run_id,
        step,
        model,
        usage.input_tokens,
        usage.output_tokens,
        None if cost_usd is None else str(cost_usd),
        created.isoformat(),
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
        provider,
        event_id,
        sequence,
    )


def _row(run_id: str, row: EventUsage, created: datetime) -> tuple[object, ...]:
    return _values(
        run_id,
        row.step,
        row.usage,
        row.model,
        row.cost_usd,
        row.provider,
        created,
        row.event_id,
        row.sequence,
    )


def _entry(row: tuple) -> LedgerEntry:  # type: ignore[type-arg]
    cost: Decimal | None
    try:
        cost = None if row[6] is None else Decimal(row[6])
    except InvalidOperation as exc:
        raise StorageError(f"ledger entry {row[0]} has an unreadable cost {row[6]!r}") from exc
    return LedgerEntry(
        id=int(row[0]),
        run_id=row[1],
        step=int(row[2]),
        model=row[3],
        usage=TokenUsage(
            input_tokens=int(row[4]),
            output_tokens=int(row[5]),
            cache_read_tokens=int(row[8]),
            cache_write_tokens=int(row[9]),
            reasoning_tokens=int(row[10]),
        ),
        cost_usd=cost,
        created_at=datetime.fromisoformat(row[7]),
        provider=row[11],
        event_id=row[12],
        sequence=None if row[13] is None else int(row[13]),
    )


__all__ = ["EventUsage", "LedgerEntry", "RunBehind", "TokenLedger"]
