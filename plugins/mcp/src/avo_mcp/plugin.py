"""Entry points: the ``serve-mcp`` and ``mcp`` commands (cheap to import)."""

from __future__ import annotations

from avo.plugins import lazy_command, provides

SERVE_MCP = lazy_command(
    "serve-mcp",
    "avo_mcp.cli",
    help="serve avo's workspace tools and files over MCP (stdio, or --http)",
    configure="configure_serve",
    run="run_serve",
)
MCP = lazy_command(
    "mcp",
    "avo_mcp.cli",
    help="manage the MCP servers in ~/.avo/mcp.json (add, list, remove, login, show, prompt)",
    configure="configure_mcp",
    run="run_mcp",
)

serve_mcp = provides(SERVE_MCP)
mcp = provides(MCP)

__all__ = ["MCP", "SERVE_MCP", "mcp", "serve_mcp"]
