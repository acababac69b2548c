"""Several MCP servers at once: what a REPL or ``avo run`` boots from ``mcp.json``.

::

    async with MCPToolbox(servers_from_config()) as toolbox:
        runtime = AgentRuntime(provider=provider, tools=toolbox.tools())
        for name, reason in toolbox.failures.items():
            print(f"MCP server {name} is unavailable: {reason}")

Servers start concurrently; one that fails to start is reported in
``failures`` (name -> reason) and skipped, never failing the others. Leaving
the block stops every started server (each reaped). Tool names are resolved
across all servers together, so two servers offering ``search`` both keep a
usable (deterministically suffixed) tool. ``toolbox.attach(runtime.tools)``
puts the tools in a runtime's registry and keeps them current when a server
announces that its tool list changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from avo.exceptions import AvoError
from avo.tools import ToolRegistry
from avo_mcp.results import DEFAULT_MAX_OUTPUT_CHARS
from avo_mcp.session import MCPSession
from avo_mcp.tools import ToolSync, tools_for


class MCPToolbox:
    """Start several MCP servers; expose the tools of those that came up."""

    def __init__(
        self,
        servers: Iterable[MCPSession],
        *,
        prefix_with_name: bool = False,
        trust_annotations: bool = False,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        resource_tools: bool = True,
    ) -> None:
        self.servers = list(servers)
        names = [server.name for server in self.servers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise AvoError(f"MCP server names must be unique; repeated: {', '.join(duplicates)}")
        self.prefix_with_name = prefix_with_name
        self.trust_annotations = trust_annotations
        self.max_output_chars = max_output_chars
        self.resource_tools = resource_tools
        self.failures: dict[str, str] = {}
        self._running: list[MCPSession] = []
        self._sync = ToolSync(self.tools)

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
                server.add_tools_listener(self._sync.refresh)
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
        for server in running:
            server.remove_tools_listener(self._sync.refresh)
        await asyncio.gather(*(server.stop() for server in running), return_exceptions=True)

    @property
    def running(self) -> list[MCPSession]:
        """The servers that started."""
        return list(self._running)

    def tools(self) -> list[Any]:
        """The tools of every running server (``<server>__<tool>`` with prefix_with_name)."""
        prefixes = {
            server.name: f"{server.name}__" if self.prefix_with_name else ""
            for server in self._running
        }
        return tools_for(
            self._running,
            prefixes=prefixes,
            trust_annotations=self.trust_annotations,
            max_output_chars=self.max_output_chars,
            resource_tools=self.resource_tools,
        )

    def attach(self, registry: ToolRegistry) -> ToolRegistry:
        """Put the tools in ``registry`` (e.g. ``runtime.tools``) and keep them current."""
        return self._sync.attach(registry)


__all__ = ["MCPToolbox"]
