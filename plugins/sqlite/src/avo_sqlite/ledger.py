"""TokenLedger: one persisted usage record per model call (table ``ledger_entries``).

Besides input and output tokens a row keeps the tokens read from and written to
the vendor's prompt cache, the reasoning tokens, and the provider that answered,
so a report can price cache tokens at their own prices and say what caching
saved. Those columns were added after the table: a file written by an older
avo-sqlite gets them (``ALTER TABLE ... ADD COLUMN``, zero / NULL for the old
rows) the first time a ledger opens it writable; older readers, which name their
columns, keep reading it. A read-only file without them reads as zeros.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

from avo.exceptions import StorageError
from avo.models import TokenUsage, utc_now
from avo_sqlite._sync import SyncSQLiteStore

_COLUMNS = "id, run_id, step, model, input_tokens, output_tokens, cost_usd, created_at"
_ADDED = (
    ("cache_read_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("cache_write_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("reasoning_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("provider", "TEXT"),
)
"""Columns added to ``ledger_entries`` after its first release, with their definitions."""
_TABLE_INFO = "PRAGMA table_info(ledger_entries)"


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
            missing = []
        absent = {name for name, _ in missing}
        extra = [
            ("NULL" if kind == "TEXT" else "0") if name in absent else name for name, kind in _ADDED
        ]
        return ", ".join([_COLUMNS, *extra])

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
        """Persist one usage record and return it with its id."""
        if not run_id:
            raise StorageError("run_id must be a non-empty string")
        if step < 0:
            raise StorageError(f"step must be >= 0, got {step}")
        if cost_usd is not None and (not cost_usd.is_finite() or cost_usd < 0):
            raise StorageError(f"cost_usd must be a finite, non-negative Decimal, got {cost_usd}")
        created = utc_now()
        with self._tx("recording usage") as conn:
            cursor = conn.execute(
                "INSERT INTO ledger_entries (run_id, step, model, input_tokens, output_tokens,"
                " cost_usd, created_at, cache_read_tokens, cache_write_tokens, reasoning_tokens,"
                " provider) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
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
                ),
            )
            entry_id = int(cursor.lastrowid or 0)
        return LedgerEntry(entry_id, run_id, step, model, usage, cost_usd, created, provider)

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
    )


__all__ = ["LedgerEntry", "TokenLedger"]
