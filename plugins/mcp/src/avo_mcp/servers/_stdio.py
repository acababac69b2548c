"""What every built-in server shares: serve a registry on stdio as ``avo-<name>``."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from avo.tools import ToolRegistry
from avo_mcp.server import AvoMcpServer


def serve(
    registry: ToolRegistry,
    *,
    name: str,
    workspace_root: str | os.PathLike[str] | None = None,
    tool_context: Callable[[], AbstractContextManager[Any]] | None = None,
) -> int:
    """Serve ``registry`` over stdio until stdin closes; returns the exit code."""
    from avo_mcp import __version__

    AvoMcpServer(
        registry,
        server_name=f"avo-{name}",
        server_version=__version__,
        workspace_root=workspace_root,
        tool_context=tool_context,
    ).serve_stdio()
    return 0


__all__ = ["serve"]
