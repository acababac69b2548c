"""A server's resources offered to the model: ``list_resources`` and ``read_resource``.

Tools often answer with a ``resource_link`` (a URI) instead of the data; with
these two tools the model can follow it. Text resources are returned as text,
binary ones as a placeholder (see :mod:`avo_mcp.results`), capped like tool
results.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from avo.exceptions import MCPError
from avo.models import ToolMetadata, ToolRisk
from avo_mcp.results import DEFAULT_MAX_OUTPUT_CHARS, ToolOutput, cap, resource_part
from avo_mcp.session import MCPSession

_LISTED = 200


class ListResourcesTool:
    """``list_resources``: the server's resources and resource templates, one per line."""

    def __init__(self, server: MCPSession, *, name: str, max_output_chars: int) -> None:
        self.server = server
        self.max_output_chars = max_output_chars
        self._metadata = ToolMetadata(
            name=name,
            description=f"List the resources (URIs) MCP server {server.name} offers.",
            input_schema={"type": "object", "properties": {}},
            risk=ToolRisk.INSPECT,
        )

    @property
    def metadata(self) -> ToolMetadata:
        """Name, description and the (empty) input schema."""
        return self._metadata

    async def invoke(self, arguments: Mapping[str, Any]) -> str:
        """``uri  name  (mimeType)`` lines, then templates."""
        try:
            resources = await self.server.list_resources()
        except MCPError as exc:
            raise MCPError(f"list_resources failed: {exc}", tool_name=self._metadata.name) from exc
        try:
            templates = await self.server.list_resource_templates()
        except MCPError:
            templates = []  # templates are optional
        lines = []
        for item in resources[:_LISTED]:
            mime = f" ({item['mimeType']})" if item.get("mimeType") else ""
            lines.append(f"{item.get('uri')}  {item.get('name', '')}{mime}".rstrip())
        if len(resources) > _LISTED:
            lines.append(f"[{len(resources) - _LISTED} more resources not listed]")
        for item in templates[:_LISTED]:
            lines.append(f"template {item.get('uriTemplate')}  {item.get('name', '')}".rstrip())
        return cap("\n".join(lines) or "(the server lists no resources)", self.max_output_chars)


class ReadResourceTool:
    """``read_resource(uri)``: one resource's content."""

    def __init__(self, server: MCPSession, *, name: str, max_output_chars: int) -> None:
        self.server = server
        self.max_output_chars = max_output_chars
        self._metadata = ToolMetadata(
            name=name,
            description=(
                f"Read a resource of MCP server {server.name} by URI (for example a "
                "resource link a tool returned)."
            ),
            input_schema={
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "the resource URI"}},
                "required": ["uri"],
            },
            risk=ToolRisk.INSPECT,
        )

    @property
    def metadata(self) -> ToolMetadata:
        """Name, description and the ``uri`` argument."""
        return self._metadata

    async def invoke(self, arguments: Mapping[str, Any]) -> str:
        """The resource's contents rendered as text (binary described)."""
        uri = arguments.get("uri")
        if not isinstance(uri, str) or not uri:
            raise MCPError("read_resource needs a 'uri' string", tool_name=self._metadata.name)
        try:
            contents = await self.server.read_resource(uri)
        except MCPError as exc:
            raise MCPError(
                f"read_resource {uri!r} failed: {exc}", tool_name=self._metadata.name
            ) from exc
        output = ToolOutput(
            parts=tuple(resource_part(item) for item in contents),
            max_chars=self.max_output_chars,
        )
        return output.for_model()


def resource_tools_for(
    server: MCPSession,
    *,
    list_name: str,
    read_name: str,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> list[Any]:
    """The two resource tools of one server."""
    return [
        ListResourcesTool(server, name=list_name, max_output_chars=max_output_chars),
        ReadResourceTool(server, name=read_name, max_output_chars=max_output_chars),
    ]


__all__ = ["ListResourcesTool", "ReadResourceTool", "resource_tools_for"]
