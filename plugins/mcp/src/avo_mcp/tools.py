"""MCP tools as avo tools: :func:`mcp_tool`, :func:`mcp_tools`, :class:`MCPClient`.

An MCP tool's input schema is whatever JSON Schema the server declares, so the
adapter implements the :class:`avo.tools.Tool` protocol directly (``metadata``
+ ``async invoke``) instead of going through ``FunctionTool``'s fixed pydantic
arguments model; the model sees the server's schema unchanged and the server
validates the arguments.

What a call returns to the model is the result rendered once by
:mod:`avo_mcp.results` (text joined, structured content only when there is no
text, media as placeholders, capped with a note), never the JSON-RPC wrapper.

Every failure surfaces as :class:`~avo.exceptions.MCPError` (an alias of
``ToolExecutionError``), which ``ToolRegistry.invoke`` turns into a failed
``ToolResult`` for the model: a tool that reports ``isError``, a server that
crashed, hung past its timeout or wrote garbage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from avo.approval import tool_input
from avo.exceptions import MCPError, ToolInputRequiredError
from avo.models import ToolMetadata, ToolRisk
from avo.tools import ToolRegistry
from avo_mcp.features import PendingCall
from avo_mcp.framing import JsonDict
from avo_mcp.naming import assign_tool_names, tool_name_for
from avo_mcp.results import DEFAULT_MAX_OUTPUT_CHARS, convert_result
from avo_mcp.session import MCPSession


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
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        remote_name = descriptor.get("name")
        if not isinstance(remote_name, str) or not remote_name:
            raise MCPError(f"MCP tool descriptor has no name: {dict(descriptor)!r}")
        self.server = server
        self.remote_name = remote_name
        self.max_output_chars = max_output_chars
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

    async def invoke(self, arguments: Mapping[str, Any]) -> Any:
        """Call the remote tool and return what the model should read.

        Raises MCPError when the call fails in any way (``isError`` included),
        and ToolInputRequiredError when the server asked a person for input
        that nobody has given yet (see :data:`avo_mcp.features.ask_person`).
        """
        pending = PendingCall(self.remote_name, given=tool_input())
        try:
            wrapped = await self.server.call_tool(
                self.remote_name,
                dict(arguments),
                pending=pending,
                on_progress=self._progress_sink(),
            )
        except MCPError as exc:
            if pending.asked is not None:
                raise self._needs_input(pending.asked) from None
            raise MCPError(
                f"MCP tool {self.remote_name!r} failed: {exc}", tool_name=self._metadata.name
            ) from exc
        if pending.asked is not None:  # its answer is discarded: the call runs again
            raise self._needs_input(pending.asked)
        raw = wrapped.get("result")
        output = convert_result(
            raw if isinstance(raw, dict) else {}, max_chars=self.max_output_chars
        )
        if wrapped.get("is_error"):
            detail = output.for_model() if output.parts or output.structured else "no error text"
            raise MCPError(
                f"MCP tool {self.remote_name!r} on server {self.server.name!r} "
                f"returned an error: {detail}",
                tool_name=self._metadata.name,
            )
        return output.for_runtime()  # images as content blocks (avo.content_blocks)

    def _progress_sink(self) -> Any:
        """The server's progress for this call: to the run's log (when it runs in a run)
        and to the connection's own ``on_progress`` (a terminal's lines)."""
        from avo.tool_progress import progress_reporter

        record = progress_reporter()
        features = getattr(self.server, "features", None)
        show = getattr(features, "on_progress", None)
        if record is None:
            return show

        def sink(update: Any) -> None:
            record(update.progress, update.total, update.message)
            if show is not None:
                show(update)

        return sink

    def _needs_input(self, asked: Any) -> ToolInputRequiredError:
        return ToolInputRequiredError(
            f"MCP server {self.server.name!r} asks for input during {self.remote_name!r}",
            question=f"{self.server.name} asks: {asked.message}",
            schema=dict(asked.requested_schema),
            tool_name=self._metadata.name,
        )

    def __repr__(self) -> str:
        return f"MCPTool({self._metadata.name!r} on {self.server.name!r})"


def mcp_tool(
    server: MCPSession,
    descriptor: JsonDict,
    *,
    name: str | None = None,
    risk: ToolRisk | None = None,
    trust_annotations: bool = False,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> MCPTool:
    """Wrap one ``tools/list`` descriptor of a started server as an avo tool."""
    if risk is None and trust_annotations:
        annotations = descriptor.get("annotations")
        risk = risk_from_annotations(annotations if isinstance(annotations, dict) else None)
    return MCPTool(server, descriptor, name=name, risk=risk, max_output_chars=max_output_chars)


def mcp_tools(
    server: MCPSession,
    *,
    prefix: str = "",
    trust_annotations: bool = False,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    resource_tools: bool = True,
) -> list[Any]:
    """Every tool of a started server as avo tools (optionally name-prefixed).

    Names are made model-safe and unique (see :mod:`avo_mcp.naming`). When the
    server offers resources, ``list_resources`` and ``read_resource`` tools
    are added (``resource_tools=False`` leaves them out).
    """
    return tools_for(
        [server],
        prefixes={server.name: prefix},
        trust_annotations=trust_annotations,
        max_output_chars=max_output_chars,
        resource_tools=resource_tools,
    )


def tools_for(
    servers: list[MCPSession],
    *,
    prefixes: Mapping[str, str],
    trust_annotations: bool = False,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    resource_tools: bool = True,
) -> list[Any]:
    """The tools of several started servers, named together so no two clash."""
    from avo_mcp.resource_tools import resource_tools_for

    entries: list[tuple[tuple[str, str, str], str]] = []
    for server in servers:
        if not server.started:
            raise MCPError(f"MCP server {server.name!r} is not started; call start() first")
        prefix = prefixes.get(server.name, "")
        for descriptor in server.tools:
            entries.append(((server.name, "tool", descriptor["name"]), prefix + descriptor["name"]))
        if resource_tools and "resources" in server.capabilities:
            for remote in ("list_resources", "read_resource"):
                entries.append(((server.name, "resource", remote), prefix + remote))
    names = assign_tool_names(entries)
    tools: list[Any] = []
    for server in servers:
        for descriptor in server.tools:
            tools.append(
                mcp_tool(
                    server,
                    descriptor,
                    name=names[(server.name, "tool", descriptor["name"])],
                    trust_annotations=trust_annotations,
                    max_output_chars=max_output_chars,
                )
            )
        if resource_tools and "resources" in server.capabilities:
            tools.extend(
                resource_tools_for(
                    server,
                    list_name=names[(server.name, "resource", "list_resources")],
                    read_name=names[(server.name, "resource", "read_resource")],
                    max_output_chars=max_output_chars,
                )
            )
    return tools


class ToolSync:
    """Keep the MCP tools of some servers in a ``ToolRegistry`` current.

    When a server announces ``notifications/tools/list_changed``, its tool
    list is fetched again and the registry's MCP tools are replaced, so the
    next model request (the runtime reads the registry for every step) offers
    the new set. Tools not made by this object are never touched.
    """

    def __init__(self, build: Any) -> None:
        self._build = build
        self._registries: list[tuple[ToolRegistry, set[str]]] = []

    def attach(self, registry: ToolRegistry) -> ToolRegistry:
        """Register the current MCP tools in ``registry`` and keep them current.

        A registry already holding these servers' tools (``AgentRuntime(tools=
        client.tools())``) has them replaced, not duplicated.
        """
        names = set()
        for tool in self._build():
            name = tool.metadata.name
            if name in registry and getattr(registry.get(name), "server", None) is tool.server:
                registry.unregister(name)
            registry.register(tool)
            names.add(name)
        self._registries.append((registry, names))
        return registry

    def refresh(self, _session: Any = None) -> None:
        """Replace the MCP tools of every attached registry with the current set."""
        tools = self._build()
        for index, (registry, old) in enumerate(self._registries):
            for name in old:
                if name in registry:
                    registry.unregister(name)
            for tool in tools:
                if tool.metadata.name not in registry:
                    registry.register(tool)
            self._registries[index] = (registry, {tool.metadata.name for tool in tools})


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
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    resource_tools: bool = True
    _sync: ToolSync | None = field(default=None, init=False, repr=False)

    async def __aenter__(self) -> MCPClient:
        await self.server.start()
        self.started = True
        self._sync = ToolSync(self.tools)
        self.server.add_tools_listener(self._sync.refresh)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.started = False
        if self._sync is not None:
            self.server.remove_tools_listener(self._sync.refresh)
        await self.server.stop()

    def tools(self) -> list[Any]:
        """The server's tools; only valid inside the ``async with`` block."""
        if not self.started:
            raise MCPError("MCPClient used outside `async with` block")
        return mcp_tools(
            self.server,
            prefix=self.prefix,
            trust_annotations=self.trust_annotations,
            max_output_chars=self.max_output_chars,
            resource_tools=self.resource_tools,
        )

    def attach(self, registry: ToolRegistry) -> ToolRegistry:
        """Put the tools in ``registry`` (e.g. ``runtime.tools``) and keep them current."""
        if not self.started or self._sync is None:
            raise MCPError("MCPClient used outside `async with` block")
        return self._sync.attach(registry)


__all__ = [
    "MCPClient",
    "MCPTool",
    "ToolSync",
    "mcp_tool",
    "mcp_tools",
    "risk_from_annotations",
    "tool_name_for",
    "tools_for",
]
