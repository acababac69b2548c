"""MCP tools as avo tools: :func:`mcp_tool`, :func:`mcp_tools`, :class:`MCPClient`.

An MCP tool's input schema is whatever JSON Schema the server declares, so the
adapter implements the :class:`avo.tools.Tool` protocol directly (``metadata``
+ ``async invoke``) instead of going through ``FunctionTool``'s fixed pydantic
arguments model; the model sees the server's schema unchanged and the server
validates the arguments.

Every failure surfaces as :class:`~avo.exceptions.MCPError` (an alias of
``ToolExecutionError``), which ``ToolRegistry.invoke`` turns into a failed
``ToolResult`` for the model: a tool that reports ``isError``, a server that
crashed, hung past its timeout or wrote garbage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from avo.exceptions import MCPError
from avo.models import ToolMetadata, ToolRisk
from avo_mcp.framing import JsonDict
from avo_mcp.session import MCPSession

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


def tool_name_for(remote_name: str, prefix: str = "") -> str:
    """A model-safe tool name: ``[A-Za-z0-9_-]{1,64}`` (providers reject others).

    MCP allows names such as ``weather.get``; other characters become ``_``.
    """
    return _INVALID_NAME_CHARS.sub("_", f"{prefix}{remote_name}")[:_MAX_NAME]


def risk_from_annotations(annotations: Mapping[str, Any] | None) -> ToolRisk | None:
    """Map MCP tool annotations to avo's risk class.

    ``readOnlyHint: true`` -> INSPECT; ``destructiveHint: false`` -> MODIFY;
    anything else -> None (treated as EXECUTE). Annotations are claims made by
    the server, so they are only used when the caller opts in (``trust_annotations``).
    """
    if not annotations:
        return None
    if annotations.get("readOnlyHint") is True:
        return ToolRisk.INSPECT
    if annotations.get("destructiveHint") is False:
        return ToolRisk.MODIFY
    return None


class MCPTool:
    """One tool of an MCP server, usable in an avo ``ToolRegistry``."""

    def __init__(
        self,
        server: MCPSession,
        descriptor: Mapping[str, Any],
        *,
        name: str | None = None,
        risk: ToolRisk | None = None,
    ) -> None:
        remote_name = descriptor.get("name")
        if not isinstance(remote_name, str) or not remote_name:
            raise MCPError(f"MCP tool descriptor has no name: {dict(descriptor)!r}")
        self.server = server
        self.remote_name = remote_name
        schema = descriptor.get("inputSchema")
        if not isinstance(schema, dict):
            schema = {"type": "object", "properties": {}}
        elif "type" not in schema:
            schema = {"type": "object", **schema}
        description = descriptor.get("description")
        if not isinstance(description, str) or not description.strip():
            description = f"MCP tool {remote_name} from server {server.name}"
        self._metadata = ToolMetadata(
            name=name or tool_name_for(remote_name),
            description=description,
            input_schema=schema,
            risk=risk,
        )

    @property
    def metadata(self) -> ToolMetadata:
        """Name, description and the server's input schema."""
        return self._metadata

    async def invoke(self, arguments: Mapping[str, Any]) -> JsonDict:
        """Call the remote tool; raise MCPError when it fails in any way."""
        try:
            result = await self.server.call_tool(self.remote_name, dict(arguments))
        except MCPError as exc:
            raise MCPError(
                f"MCP tool {self.remote_name!r} failed: {exc}", tool_name=self._metadata.name
            ) from exc
        if result.get("is_error"):
            detail = result.get("text") or "no error text"
            raise MCPError(
                f"MCP tool {self.remote_name!r} on server {self.server.name!r} "
                f"returned an error: {detail}",
                tool_name=self._metadata.name,
            )
        return result

    def __repr__(self) -> str:
        return f"MCPTool({self._metadata.name!r} on {self.server.name!r})"


def mcp_tool(
    server: MCPSession,
    descriptor: JsonDict,
    *,
    name: str | None = None,
    risk: ToolRisk | None = None,
    trust_annotations: bool = False,
) -> MCPTool:
    """Wrap one ``tools/list`` descriptor of a started server as an avo tool."""
    if risk is None and trust_annotations:
        annotations = descriptor.get("annotations")
        risk = risk_from_annotations(annotations if isinstance(annotations, dict) else None)
    return MCPTool(server, descriptor, name=name, risk=risk)


def mcp_tools(
    server: MCPSession, *, prefix: str = "", trust_annotations: bool = False
) -> list[MCPTool]:
    """Every tool of a started server as avo tools (optionally name-prefixed)."""
    if not server.started:
        raise MCPError(f"MCP server {server.name!r} is not started; call start() first")
    return [
        mcp_tool(
            server,
            descriptor,
            name=tool_name_for(descriptor["name"], prefix),
            trust_annotations=trust_annotations,
        )
        for descriptor in server.tools
    ]


@dataclass
class MCPClient:
    """``async with MCPClient(server) as client: tools = client.tools()``.

    Entering starts the server, leaving stops it (and reaps its process) even
    when the body raised.
    """

    server: MCPSession
    started: bool = False
    prefix: str = ""
    trust_annotations: bool = field(default=False)

    async def __aenter__(self) -> MCPClient:
        await self.server.start()
        self.started = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.started = False
        await self.server.stop()

    def tools(self) -> list[MCPTool]:
        """The server's tools; only valid inside the ``async with`` block."""
        if not self.started:
            raise MCPError("MCPClient used outside `async with` block")
        return mcp_tools(self.server, prefix=self.prefix, trust_annotations=self.trust_annotations)


__all__ = [
    "MCPClient",
    "MCPTool",
    "mcp_tool",
    "mcp_tools",
    "risk_from_annotations",
    "tool_name_for",
]
