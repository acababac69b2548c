"""``avo models [PROVIDER]``: every installed provider's models, context window and price.

Read from what each provider plugin declares (``ProviderSpec.models``,
``capabilities.context_window``, ``pricing``); anything a plugin does not
declare is shown as ``unknown``, never guessed. Prices are USD per million
tokens (input / output).
"""

from __future__ import annotations

import argparse
from decimal import Decimal
from typing import Any

from avo.exceptions import AvoError

UNKNOWN = "unknown"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo models``'s arguments."""
    parser.add_argument("provider", nargs="?", metavar="PROVIDER", help="only this provider")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _per_million(rate: Any) -> str | None:
    if rate is None:
        return None
    value = (Decimal(str(rate)) * 1000).normalize()
    return format(value, "f")


def catalog(manager: Any, only: str | None = None) -> list[dict[str, Any]]:
    """One row per (provider, model) the installed provider plugins declare."""
    names = manager.names("provider")
    if only is not None:
        if only not in names:
            raise AvoError(f"unknown provider {only!r}; installed: {', '.join(names) or '-'}")
        names = [only]
    rows: list[dict[str, Any]] = []
    for name in names:
        try:
            spec = manager.get("provider", name)
        except AvoError as exc:
            rows.append({"provider": name, "model": None, "problem": str(exc)})
            continue
        capabilities = getattr(spec, "capabilities", None)
        window = getattr(capabilities, "context_window", None)
        pricing = dict(getattr(spec, "pricing", {}) or {})
        models = list(getattr(spec, "models", ()) or ()) or [None]
        for model in models:
            rates = pricing.get(model) if model is not None else None
            rows.append(
                {
                    "provider": name,
                    "model": model,
                    "context_window": window,
                    "input_usd_per_million": _per_million(rates[0]) if rates else None,
                    "output_usd_per_million": _per_million(rates[1]) if rates else None,
                }
            )
    return rows


def run(args: argparse.Namespace) -> int:
    """Print the catalog."""
    from avo.cli._output import print_json, print_table
    from avo.plugins.manager import PluginManager

    manager = getattr(args, "avo_plugins", None) or PluginManager(
        environ=getattr(args, "avo_environ", None)
    )
    rows = catalog(manager, args.provider)
    if args.json:
        print_json(rows)
        return 0

    def cell(value: Any) -> str:
        return UNKNOWN if value is None else str(value)

    table = [
        (
            row["provider"],
            cell(row.get("model")) if "problem" not in row else f"(broken: {row['problem']})",
            f"{row['context_window']:,}" if row.get("context_window") else UNKNOWN,
            cell(row.get("input_usd_per_million")),
            cell(row.get("output_usd_per_million")),
        )
        for row in rows
    ]
    headers = ["PROVIDER", "MODEL", "CONTEXT", "INPUT $/1M", "OUTPUT $/1M"]
    print_table(args, headers, table)
    return 0


__all__ = ["UNKNOWN", "catalog", "configure", "run"]
