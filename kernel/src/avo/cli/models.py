"""``avo models [PROVIDER]``: every installed provider's models, context window and price.

Read from what each provider plugin declares (``ProviderSpec.catalog``: context
window, output limit, capabilities, prices with cache read/write and the date
they were checked; else ``models``, ``capabilities.context_window`` and
``pricing``); a provider whose server lists its models (``list_models``, e.g. a
local Ollama) is asked when named. Anything not declared is shown as
``unknown``, never guessed. Prices are USD per million tokens.
"""

from __future__ import annotations

import argparse
import sys
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


def _money(value: Any) -> str | None:
    return None if value is None else format(Decimal(str(value)).normalize(), "f")


def _capabilities(info: Any) -> list[str] | None:
    """What the catalog says the model does (None when it says nothing)."""
    known = [
        (info.tools, "tools"),
        (info.vision, "vision"),
        (bool(info.documents) if info.documents is not None else None, "documents"),
        (info.json_schema, "json-schema"),
        (info.thinking, "thinking"),
        (info.prompt_caching, "prompt-cache"),
    ]
    if all(flag is None for flag, _ in known):
        return None
    return [name for flag, name in known if flag]


def _row(name: str, model: str | None, spec: Any, info: Any) -> dict[str, Any]:
    capabilities = getattr(spec, "capabilities", None)
    window = getattr(capabilities, "context_window", None)
    windows = dict(getattr(spec, "context_windows", {}) or {})
    rates = dict(getattr(spec, "pricing", {}) or {}).get(model) if model is not None else None
    row: dict[str, Any] = {
        "provider": name,
        "model": model,
        "context_window": windows.get(model, window) if model is not None else window,
        "max_output_tokens": None,
        "capabilities": None,
        "documents": None,
        "input_usd_per_million": _per_million(rates[0]) if rates else None,
        "output_usd_per_million": _per_million(rates[1]) if rates else None,
        "cache_read_usd_per_million": None,
        "cache_write_usd_per_million": None,
        "prices_checked": None,
        "local": bool(getattr(spec, "local", False)),
        "source": "catalog" if model is not None else None,
    }
    if info is not None:
        row["context_window"] = info.context_window or row["context_window"]
        row["max_output_tokens"] = info.max_output_tokens
        row["capabilities"] = _capabilities(info)
        row["documents"] = list(info.documents) if info.documents is not None else None
        row["local"] = row["local"] or info.local
        row["source"] = info.source
        prices = info.prices
        if prices is not None:
            row["input_usd_per_million"] = _money(prices.input)
            row["output_usd_per_million"] = _money(prices.output)
            row["cache_read_usd_per_million"] = _money(prices.cache_read)
            row["cache_write_usd_per_million"] = _money(prices.cache_write)
            row["prices_checked"] = prices.checked
    if row["local"] and row["input_usd_per_million"] is None:
        row["input_usd_per_million"] = row["output_usd_per_million"] = "0"
    return row


def _server_models(name: str, spec: Any, environ: Any) -> list[Any]:
    """What the provider's server lists right now (e.g. a local Ollama's pulled models)."""
    import os

    lister = getattr(spec, "list_models", None)
    if lister is None:
        return []
    return list(lister({}, environ=environ if environ is not None else os.environ))


def catalog(manager: Any, only: str | None = None, environ: Any = None) -> list[dict[str, Any]]:
    """One row per (provider, model) the installed provider plugins declare.

    A provider that lists its models from its server (``ProviderSpec.list_models``,
    e.g. Ollama) adds them when asked for by name; a server that cannot be
    reached is reported in the row's ``problem``.
    """
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
        infos = dict(getattr(spec, "catalog", {}) or {})
        served: list[Any] = []
        if only is not None and getattr(spec, "list_models", None) is not None:
            try:
                served = _server_models(name, spec, environ)
            except AvoError as exc:
                rows.append({"provider": name, "model": None, "problem": str(exc)})
        listed = [info.name for info in served]
        models = listed or list(getattr(spec, "models", ()) or ()) or [None]
        by_name = {**infos, **{info.name: info for info in served}}
        for model in models:
            rows.append(_row(name, model, spec, by_name.get(model) if model else None))
    return rows


def run(args: argparse.Namespace) -> int:
    """Print the catalog."""
    from avo.cli._output import print_json, print_table
    from avo.plugins.manager import PluginManager

    manager = getattr(args, "avo_plugins", None) or PluginManager(
        environ=getattr(args, "avo_environ", None)
    )
    rows = catalog(manager, args.provider, getattr(args, "avo_environ", None))
    if args.json:
        print_json(rows)
        return 0

    def cell(value: Any) -> str:
        return UNKNOWN if value is None else str(value)

    def count(value: Any) -> str:
        return f"{value:,}" if value else UNKNOWN

    def cache(row: dict[str, Any]) -> str:
        read, write = row.get("cache_read_usd_per_million"), row.get("cache_write_usd_per_million")
        if read is None and write is None:
            return UNKNOWN
        return f"{cell(read)} / {cell(write)}"

    table = []
    problems = []
    for row in rows:
        if "problem" in row:
            problems.append(f"avo: {row['provider']}: {row['problem']}")
            continue
        caps = row.get("capabilities")
        table.append(
            (
                row["provider"],
                cell(row.get("model")),
                count(row.get("context_window")),
                count(row.get("max_output_tokens")),
                UNKNOWN if caps is None else (",".join(caps) or "-"),
                cell(row.get("input_usd_per_million")),
                cell(row.get("output_usd_per_million")),
                cache(row),
                "local" if row.get("local") else cell(row.get("prices_checked")),
            )
        )
    headers = [
        "PROVIDER",
        "MODEL",
        "CONTEXT",
        "MAX OUT",
        "CAPABILITIES",
        "IN $/1M",
        "OUT $/1M",
        "CACHE R/W $/1M",
        "CHECKED",
    ]
    print_table(args, headers, table)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 0


__all__ = ["UNKNOWN", "catalog", "configure", "run"]
