"""Structural diffs of stored runs: what ``avo runs diff`` prints, as a public API.

:func:`run_facts` collects what a diff compares of one run (status, stop
reason, steps, tokens, output, error, the state sequence and every tool call
with its arguments and outcome); :func:`diff_facts` compares two such sets of
facts, which may come from two stores or from a saved report
(:meth:`RunFacts.to_dict` / :meth:`RunFacts.from_dict`); :func:`diff_runs`
does both for two runs of one store.
"""

from __future__ import annotations

from avo.cli._runs_diff import (
    RunDiff,
    RunFacts,
    ToolCallFacts,
    diff_facts,
    diff_runs,
    run_facts,
)

__all__ = ["RunDiff", "RunFacts", "ToolCallFacts", "diff_facts", "diff_runs", "run_facts"]
