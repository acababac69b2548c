"""What every MCP client connection does, whatever carries the bytes.

:class:`MCPSession` runs the ``initialize`` handshake, lists tools (following
``nextCursor`` pages) and calls them; a transport subclass supplies
``_open`` / ``_request`` / ``_notify`` / ``stop``. The stdio transport lives in
:mod:`avo_mcp.client`, streamable HTTP in :mod:`avo_mcp.http_client`.
"""

from __future__ import annotations

import abc
from typing import Any

from avo.exceptions import MCPError
from avo_mcp.framing import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_PROTOCOL_VERSION, JsonDict

DEFAULT_TIMEOUT_SECONDS = 90.0
"""Per-request timeout: 90s covers spawning a server on a cold CI runner."""

CLIENT_INFO: JsonDict = {"name": "avo", "version": "1.0.0"}

_MAX_TOOL_PAGES = 100


class MCPSession(abc.ABC):
    """One client connection to one MCP server."""

    def __init__(
        self,
        *,
        name: str,
        timeout_seconds: float,
        startup_timeout_seconds: float | None = None,
    ) -> None:
        for label, value in (
            ("timeout_seconds", timeout_seconds),
            ("startup_timeout_seconds", startup_timeout_seconds),
        ):
            if value is not None and value <= 0:
                raise MCPError(f"{label} must be > 0, got {value!r}")
        self.name = name
        self.timeout_seconds = timeout_seconds
        self.startup_timeout_seconds = startup_timeout_seconds or max(
            timeout_seconds, DEFAULT_TIMEOUT_SECONDS
        )
        self._server_info: JsonDict = {}
        self._capabilities: JsonDict = {}
        self._protocol_version: str | None = None
        self._tools: tuple[JsonDict, ...] = ()
        self._started = False
        self._failure: MCPError | None = None

    # ----------------------------------------------------------- public state

    @property
    def server_info(self) -> JsonDict:
        """``serverInfo`` from the server's initialize result."""
        return dict(self._server_info)

    @property
    def capabilities(self) -> JsonDict:
        """The server's declared capabilities."""
        return dict(self._capabilities)

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol revision (None before :meth:`start`)."""
        return self._protocol_version

    @property
    def tools(self) -> tuple[JsonDict, ...]:
        """Tool descriptors from ``tools/list`` (name, description, inputSchema, ...)."""
        return self._tools

    @property
    def started(self) -> bool:
        """True between a successful :meth:`start` and :meth:`stop`."""
        return self._started

    # -------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Connect, run the initialize handshake and list the server's tools.

        The handshake waits up to ``startup_timeout_seconds`` (default: the
        larger of ``timeout_seconds`` and 90 s), every later request
        ``timeout_seconds``.
        """
        if self._started:
            return
        await self._open()
        try:
            result = await self.request(
                "initialize",
                {
                    "protocolVersion": LATEST_PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": dict(CLIENT_INFO),
                },
                wait_seconds=self.startup_timeout_seconds,
            )
            version = result.get("protocolVersion")
            if version not in HANDSHAKE_PROTOCOL_VERSIONS:
                raise MCPError(
                    f"MCP server {self.name!r} answered initialize with protocolVersion "
                    f"{version!r}; avo speaks {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}"
                )
            self._protocol_version = version
            self._server_info = _as_dict(result.get("serverInfo"))
            self._capabilities = _as_dict(result.get("capabilities"))
            await self._after_initialize()
            await self._notify("notifications/initialized", None)
            self._started = True
            self._tools = await self.list_tools()
        except BaseException:
            self._started = False
            await self.stop()
            raise

    async def _after_initialize(self) -> None:
        """Hook for transports that learn something from the handshake."""
        return None

    @abc.abstractmethod
    async def _open(self) -> None:
        """Open the transport (spawn the process, create the HTTP client)."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Close the transport; always safe to call, also after a failure."""

    @abc.abstractmethod
    async def _request(self, method: str, params: JsonDict | None, wait_seconds: float) -> JsonDict:
        """Send one request and return its ``result``; raise MCPError otherwise."""

    @abc.abstractmethod
    async def _notify(self, method: str, params: JsonDict | None) -> None:
        """Send one notification."""

    # ---------------------------------------------------------------- calls

    async def request(
        self, method: str, params: JsonDict | None = None, *, wait_seconds: float | None = None
    ) -> JsonDict:
        """Send a JSON-RPC request and return its ``result`` object."""
        return await self._request(method, params, wait_seconds or self.timeout_seconds)

    async def list_tools(self) -> tuple[JsonDict, ...]:
        """Every tool the server offers, following pagination."""
        tools: list[JsonDict] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            result = await self.request("tools/list", {"cursor": cursor} if cursor else None)
            page = result.get("tools")
            if not isinstance(page, list):
                raise MCPError(f"MCP server {self.name!r} answered tools/list without a tools list")
            tools.extend(t for t in page if isinstance(t, dict) and isinstance(t.get("name"), str))
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return tuple(tools)

    async def call_tool(self, name: str, arguments: JsonDict) -> JsonDict:
        """Call one tool; return ``{"name", "is_error", "result"}`` plus ``"text"``.

        ``result`` is the raw ``CallToolResult``; ``text`` joins its text content.
        A tool-level error (``isError: true``) is returned, not raised — the
        avo tool adapter turns it into a failed tool result.
        """
        if not self._started:
            raise self._failure or MCPError(
                f"MCP server {self.name!r} is not started; call start() first"
            )
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        wrapped: JsonDict = {
            "name": name,
            "is_error": bool(result.get("isError")),
            "result": result,
        }
        text = content_text(result.get("content"))
        if text is not None:
            wrapped["text"] = text
        return wrapped


def content_text(content: Any) -> str | None:
    """Join the text items of an MCP content list; None when it has none."""
    if not isinstance(content, list):
        return None
    texts = [
        item["text"]
        for item in content
        if isinstance(item, dict)
        and item.get("type") == "text"
        and isinstance(item.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


def _as_dict(value: Any) -> JsonDict:
    return dict(value) if isinstance(value, dict) else {}


__all__ = ["CLIENT_INFO", "DEFAULT_TIMEOUT_SECONDS", "MCPSession", "content_text"]
