"""avo-evals: evals and benchmarks users run on their own agents.

``avo eval SUITE`` runs each case of a suite file N times in isolated
workspaces, judges every trial with the case's checks, records each trial as a
normal run in the event store and writes JSON and JUnit reports; ``--baseline``
compares with an earlier report. ``avo bench`` measures the runtime (and a
store or tool plugin) against a bare baseline measured in the same run.
"""

from __future__ import annotations

from avo_evals.checks import CheckResult, Outcome, ToolCallRecord
from avo_evals.stats import wilson_interval
from avo_evals.suite import Case, Check, Suite, SuiteError, load_suite

__version__ = "1.0.0"

__all__ = [
    "Case",
    "Check",
    "CheckResult",
    "Outcome",
    "Suite",
    "SuiteError",
    "ToolCallRecord",
    "load_suite",
    "wilson_interval",
]
