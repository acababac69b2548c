"""avo-ledger: automatic per-step token ledger and the ``avo cost`` report."""

from __future__ import annotations

from avo_ledger.cost import (
    CostReport,
    ModelCost,
    RunCost,
    aggregate_costs,
    build_report,
    report_to_dict,
)
from avo_ledger.recorder import LedgerPlugin, pricing_from_plugins

__version__ = "1.0.0"

__all__ = [
    "CostReport",
    "LedgerPlugin",
    "ModelCost",
    "RunCost",
    "aggregate_costs",
    "build_report",
    "pricing_from_plugins",
    "report_to_dict",
]
