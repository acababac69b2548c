"""Several MCP servers at once: what a REPL or ``avo run`` boots from ``mcp.json``.

::

    async with MCPToolbox(servers_from_config()) as toolbox:
        runtime = AgentRuntime(provider=provider, tools=toolbox.tools())
        for name, reason in toolbox.failures.items():
            print(f"MCP server {name} is unavailable: {reason}")

Servers start concurrently; one that fails to start is reported in
``failures`` (name -> reason) and skipped, never failing the others. Leaving
the block stops every started server (each reaped).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from types import TracebackType

from avo.exceptions import AvoError
from avo_mcp.session import MCPSession
from avo_mcp.tools import MCPTool, mcp_tools


class MCPToolbox:
    """Start several MCP servers; expose the tools of those that came up."""

    def __init__(
        self,
        servers: Iterable[MCPSession],
        *,
        prefix_with_name: bool = False,
        trust_annotations: bool = False,
    ) -> None:
        self.servers = list(servers)
        names = [server.name for server in self.servers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise AvoError(f"MCP server names must be unique; repeated: {', '.join(duplicates)}")
        self.prefix_with_name = prefix_with_name
        self.trust_annotations = trust_annotations
        self.failures: dict[str, str] = {}
        self._running: list[MCPSession] = []

    async def __aenter__(self) -> MCPToolbox:
        results = await asyncio.gather(
            *(server.start() for server in self.servers), return_exceptions=True
        )
        for server, result in zip(self.servers, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, Exception):
                    await self._stop_all()
                    raise result
                self.failures[server.name] = str(result)
            else:
                self._running.append(server)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stop_all()

    async def _stop_all(self) -> None:
        running, self._running = self._running, []
        await asyncio.gather(*(server.stop() for server in running), return_exceptions=True)

    @property
    def running(self) -> list[MCPSession]:
        """The servers that started."""
        return list(self._running)

    def tools(self) -> list[MCPTool]:
        """The tools of every running server (``<server>__<tool>`` with prefix_with_name)."""
        tools: list[MCPTool] = []
        for server in self._running:
            prefix = f"{server.name}__" if self.prefix_with_name else ""
            tools.extend(mcp_tools(server, prefix=prefix, trust_annotations=self.trust_annotations))
        return tools


__all__ = ["MCPToolbox"]
