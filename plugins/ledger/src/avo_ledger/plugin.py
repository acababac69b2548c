"""Entry-point objects (cheap to import: the report code loads when the command runs)."""

from __future__ import annotations

from typing import Any

from avo.plugins import CommandSpec, provides


def _configure(parser: Any) -> None:
    from avo_ledger.cost import configure

    configure(parser)


def _run(args: Any) -> int:
    from avo_ledger.cost import run

    return run(args)


cost = provides(
    CommandSpec(
        name="cost",
        configure=_configure,
        run=_run,
        help="token usage and cost per run and per model, from the token ledger",
    )
)

__all__ = ["cost"]
