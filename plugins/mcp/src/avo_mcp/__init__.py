"""avo-mcp: MCP servers become avo tools; avo's tool registry is served over MCP.

Importing this package is cheap: names are resolved on first use, so neither
``import avo`` nor entry-point discovery pulls in subprocess or HTTP machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo.lazy import lazy_exports

if TYPE_CHECKING:
    from avo.exceptions import MCPError
    from avo_mcp.client import MCPServer
    from avo_mcp.config import McpCliError, load_servers, resolve_env, servers_from_config
    from avo_mcp.features import (
        ClientFeatures,
        ProgressUpdate,
        ProviderSampler,
        ReplyElicitation,
        ask_person,
    )
    from avo_mcp.http_client import MCPHttpServer
    from avo_mcp.oauth import MCPAuthError, OAuthClient, OAuthConfig, TokenStore
    from avo_mcp.registry import build_default_registry
    from avo_mcp.server import AvoMcpServer, serve_stdio, serve_stdio_async
    from avo_mcp.toolbox import MCPToolbox
    from avo_mcp.tools import MCPClient, MCPTool, mcp_tool, mcp_tools

__version__ = "1.0.0"

_LAZY: dict[str, str] = {
    "AvoMcpServer": "avo_mcp.server",
    "ClientFeatures": "avo_mcp.features",
    "MCPAuthError": "avo_mcp.oauth",
    "OAuthClient": "avo_mcp.oauth",
    "OAuthConfig": "avo_mcp.oauth",
    "ProgressUpdate": "avo_mcp.features",
    "ProviderSampler": "avo_mcp.features",
    "ReplyElicitation": "avo_mcp.features",
    "ask_person": "avo_mcp.features",
    "TokenStore": "avo_mcp.oauth",
    "MCPClient": "avo_mcp.tools",
    "MCPError": "avo.exceptions",
    "MCPHttpServer": "avo_mcp.http_client",
    "MCPServer": "avo_mcp.client",
    "MCPTool": "avo_mcp.tools",
    "MCPToolbox": "avo_mcp.toolbox",
    "McpCliError": "avo_mcp.config",
    "build_default_registry": "avo_mcp.registry",
    "load_servers": "avo_mcp.config",
    "mcp_tool": "avo_mcp.tools",
    "mcp_tools": "avo_mcp.tools",
    "resolve_env": "avo_mcp.config",
    "serve_stdio": "avo_mcp.server",
    "serve_stdio_async": "avo_mcp.server",
    "servers_from_config": "avo_mcp.config",
}


__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "AvoMcpServer",
    "ClientFeatures",
    "MCPAuthError",
    "MCPClient",
    "MCPError",
    "MCPHttpServer",
    "MCPServer",
    "MCPTool",
    "MCPToolbox",
    "McpCliError",
    "OAuthClient",
    "OAuthConfig",
    "ProgressUpdate",
    "ProviderSampler",
    "ReplyElicitation",
    "TokenStore",
    "ask_person",
    "build_default_registry",
    "load_servers",
    "mcp_tool",
    "mcp_tools",
    "resolve_env",
    "serve_stdio",
    "serve_stdio_async",
    "servers_from_config",
]
