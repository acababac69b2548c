"""``python -m avo_mcp serve-mcp|mcp ...``: the plugin's commands without the avo CLI."""

from __future__ import annotations

import argparse
import sys

from avo.exceptions import AvoError
from avo_mcp.plugin import MCP, SERVE_MCP


def main(argv: list[str] | None = None) -> int:
    """Parse and run one of the plugin's commands."""
    parser = argparse.ArgumentParser(prog="python -m avo_mcp")
    sub = parser.add_subparsers(dest="command", required=True)
    specs = {spec.name: spec for spec in (SERVE_MCP, MCP)}
    for spec in specs.values():
        spec.configure(sub.add_parser(spec.name, help=spec.help))
    args = parser.parse_args(argv)
    try:
        return int(specs[args.command].run(args))
    except AvoError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
