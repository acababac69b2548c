"""Entry points: the ``serve-mcp`` and ``mcp`` commands (cheap to import)."""

from __future__ import annotations

from typing import Any

from avo.plugins import CommandSpec, provides


def _configure_serve(parser: Any) -> None:
    from avo_mcp.cli import configure_serve

    configure_serve(parser)


def _run_serve(args: Any) -> int:
    from avo_mcp.cli import run_serve

    return run_serve(args)


def _configure_mcp(parser: Any) -> None:
    from avo_mcp.cli import configure_mcp

    configure_mcp(parser)


def _run_mcp(args: Any) -> int:
    from avo_mcp.cli import run_mcp

    return run_mcp(args)


SERVE_MCP = CommandSpec(
    name="serve-mcp",
    configure=_configure_serve,
    run=_run_serve,
    help="serve avo's workspace tools and files over MCP stdio (--workspace-root DIR)",
)
MCP = CommandSpec(
    name="mcp",
    configure=_configure_mcp,
    run=_run_mcp,
    help="manage the MCP servers in ~/.avo/mcp.json (add, list, remove)",
)

serve_mcp = provides(SERVE_MCP)
mcp = provides(MCP)

__all__ = ["MCP", "SERVE_MCP", "mcp", "serve_mcp"]
