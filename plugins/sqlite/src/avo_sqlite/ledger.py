"""TokenLedger: one persisted usage record per model call (table ``ledger_entries``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

from avo.exceptions import StorageError
from avo.models import TokenUsage, utc_now
from avo_sqlite._sync import SyncSQLiteStore

_COLUMNS = "id, run_id, step, model, input_tokens, output_tokens, cost_usd, created_at"


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


class TokenLedger(SyncSQLiteStore):
    """Token usage and cost per run, step and model; shares ``avo.db`` with the event store.

    ``avo runs gc`` deletes a run's ledger rows with the run.
    """

    def record(
        self,
        run_id: str,
        *,
        step: int,
        usage: TokenUsage,
        model: str | None = None,
        cost_usd: Decimal | None = None,
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
                " cost_usd, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    step,
                    model,
                    usage.input_tokens,
                    usage.output_tokens,
                    None if cost_usd is None else str(cost_usd),
                    created.isoformat(),
                ),
            )
            entry_id = int(cursor.lastrowid or 0)
        return LedgerEntry(entry_id, run_id, step, model, usage, cost_usd, created)

    def _where(self, run_id: str | None) -> tuple[str, tuple[object, ...]]:
        return ("", ()) if run_id is None else (" WHERE run_id = ?", (run_id,))

    def entries(self, run_id: str | None = None) -> list[LedgerEntry]:
        """Every entry (of one run when given), in recording order."""
        where, params = self._where(run_id)
        rows = self._query(
            "reading the ledger",
            f"SELECT {_COLUMNS} FROM ledger_entries{where} ORDER BY id",
            params,
        )
        return [_entry(row) for row in rows]

    def total(self, run_id: str | None = None) -> TokenUsage:
        """Summed usage (of one run when given)."""
        where, params = self._where(run_id)
        row = self._query(
            "summing the ledger",
            "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0)"
            f" FROM ledger_entries{where}",
            params,
        )[0]
        return TokenUsage(input_tokens=int(row[0]), output_tokens=int(row[1]))

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
        usage=TokenUsage(input_tokens=int(row[4]), output_tokens=int(row[5])),
        cost_usd=cost,
        created_at=datetime.fromisoformat(row[7]),
    )


__all__ = ["LedgerEntry", "TokenLedger"]
