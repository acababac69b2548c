"""Entry-point objects (cheap to import: the eval and bench code load on first use).

* ``avo.commands: eval``  — ``avo eval SUITE``: run a suite of cases N times each,
  score them, write JSON and JUnit reports, compare with a baseline.
* ``avo.commands: bench`` — ``avo bench``: the runtime's per-step cost, its growth
  with run length and a store's write cost, as ratios against a bare baseline.
"""

from __future__ import annotations

from avo.plugins import lazy_command, provides

eval_command = provides(
    lazy_command(
        "eval",
        "avo_evals.cli",
        help="run an eval suite: each case N times, checked, scored, reported (JSON + JUnit)",
    )
)

bench_command = provides(
    lazy_command(
        "bench",
        "avo_evals.bench_cli",
        help="benchmark the runtime (and your store or tool plugin) against a bare baseline",
    )
)

__all__ = ["bench_command", "eval_command"]
