"""What every MCP client connection does, whatever carries the bytes.

:class:`MCPSession` runs the ``initialize`` handshake, lists tools (following
``nextCursor`` pages) and calls them; a transport subclass supplies
``_open`` / ``_request`` / ``_notify`` / ``stop``. The stdio transport lives in
:mod:`avo_mcp.client`, streamable HTTP in :mod:`avo_mcp.http_client`.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from avo.exceptions import MCPError
from avo_mcp.features import (
    ClientFeatures,
    PendingCall,
    ProgressCallback,
    ProgressUpdate,
    elicitation_request,
    sampling_request,
)
from avo_mcp.framing import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    INTERNAL_ERROR,
    LATEST_PROTOCOL_VERSION,
    METHOD_NOT_FOUND,
    JsonDict,
    error_response,
    result_response,
)

logger = logging.getLogger("avo_mcp")

DEFAULT_TIMEOUT_SECONDS = 90.0
"""Per-request timeout: 90s covers spawning a server on a cold CI runner."""

CLIENT_INFO: JsonDict = {"name": "avo", "version": "1.0.0"}

_MAX_PAGES = 100
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}

ToolsListener = Callable[["MCPSession"], None]

_CALL: ContextVar[PendingCall | None] = ContextVar("avo_mcp_call", default=None)
"""The tool call a request is sent for (a transport that can tell which request a
server's request arrived with uses it to hand an elicitation to its own call)."""


class MCPSession(abc.ABC):
    """One client connection to one MCP server."""

    def __init__(
        self,
        *,
        name: str,
        timeout_seconds: float,
        startup_timeout_seconds: float | None = None,
        features: ClientFeatures | None = None,
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
        self._instructions: str | None = None
        self._capabilities: JsonDict = {}
        self._protocol_version: str | None = None
        self._tools: tuple[JsonDict, ...] = ()
        self._started = False
        self._failure: MCPError | None = None
        self.features = features or ClientFeatures()
        self._progress: dict[str, tuple[str, ProgressCallback]] = {}
        self._progress_ids = itertools.count(1)
        self._tools_listeners: list[ToolsListener] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._calls: list[PendingCall] = []
        self._calls_by_request: dict[Any, PendingCall] = {}

    # ----------------------------------------------------------- public state

    @property
    def server_info(self) -> JsonDict:
        """``serverInfo`` from the server's initialize result."""
        return dict(self._server_info)

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions`` from initialize (how to use its tools), if any."""
        return self._instructions

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
            await self._handshake()
            self._started = True
            self._tools = await self.list_tools()
        except BaseException:
            self._started = False
            await self.stop()
            raise

    async def _handshake(self) -> None:
        """``initialize``, then ``notifications/initialized`` (also to start a new session
        when the server ended the last one)."""
        result = await self.request(
            "initialize",
            {
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": self.features.capabilities(),
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
        instructions = result.get("instructions")
        self._instructions = instructions if isinstance(instructions, str) else None
        await self._after_initialize()
        await self._notify("notifications/initialized", None)
        await self._after_initialized()

    async def _after_initialize(self) -> None:
        """Hook for transports that learn something from the handshake."""
        return None

    async def _after_initialized(self) -> None:
        """Hook run once ``notifications/initialized`` was sent, before tools are listed."""
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

    async def _paged(self, method: str, key: str, params: JsonDict | None = None) -> list[JsonDict]:
        """Every item of a paginated list method (``nextCursor`` followed)."""
        items: list[JsonDict] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page_params = dict(params or {})
            if cursor:
                page_params["cursor"] = cursor
            result = await self.request(method, page_params or None)
            page = result.get(key)
            if not isinstance(page, list):
                raise MCPError(f"MCP server {self.name!r} answered {method} without a {key} list")
            items.extend(item for item in page if isinstance(item, dict))
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return items

    async def list_tools(self) -> tuple[JsonDict, ...]:
        """Every tool the server offers, following pagination (repeated names dropped)."""
        seen: set[str] = set()
        tools: list[JsonDict] = []
        for tool in await self._paged("tools/list", "tools"):
            name = tool.get("name")
            if isinstance(name, str) and name and name not in seen:
                seen.add(name)
                tools.append(tool)
        return tuple(tools)

    async def list_resources(self) -> list[JsonDict]:
        """``resources/list``, every page."""
        return await self._paged("resources/list", "resources")

    async def list_resource_templates(self) -> list[JsonDict]:
        """``resources/templates/list``, every page."""
        return await self._paged("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> list[JsonDict]:
        """``resources/read``: the resource's ``contents`` (text or base64 blobs)."""
        result = await self.request("resources/read", {"uri": uri})
        contents = result.get("contents")
        return [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []

    async def list_prompts(self) -> list[JsonDict]:
        """``prompts/list``, every page."""
        return await self._paged("prompts/list", "prompts")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> JsonDict:
        """``prompts/get``: ``{"description"?, "messages": [...]}``."""
        params: JsonDict = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        return await self.request("prompts/get", params)

    def add_tools_listener(self, listener: ToolsListener) -> None:
        """Call ``listener(session)`` after the tool list was refreshed (list_changed)."""
        self._tools_listeners.append(listener)

    def remove_tools_listener(self, listener: ToolsListener) -> None:
        """Stop calling ``listener``."""
        with contextlib.suppress(ValueError):
            self._tools_listeners.remove(listener)

    async def refresh_tools(self) -> tuple[JsonDict, ...]:
        """List the tools again and tell the listeners (what list_changed triggers)."""
        self._tools = await self.list_tools()
        for listener in list(self._tools_listeners):
            try:
                listener(self)
            except Exception:
                logger.exception("MCP tools listener failed for server %r", self.name)
        return self._tools

    async def call_tool(
        self,
        name: str,
        arguments: JsonDict,
        *,
        on_progress: ProgressCallback | None = None,
        pending: PendingCall | None = None,
    ) -> JsonDict:
        """Call one tool; return ``{"name", "is_error", "result"}`` plus ``"text"``.

        ``result`` is the raw ``CallToolResult``; ``text`` joins its text content.
        A tool-level error (``isError: true``) is returned, not raised — the
        avo tool adapter turns it into a failed tool result. Progress the server
        reports goes to ``on_progress`` (default: the features' ``on_progress``).
        An ``elicitation/create`` that arrives while this is the only call in
        flight is handed ``pending`` (what the call knows of a person's answer).
        """
        if not self._started:
            raise self._failure or MCPError(
                f"MCP server {self.name!r} is not started; call start() first"
            )
        params: JsonDict = {"name": name, "arguments": arguments}
        callback = on_progress or self.features.on_progress
        token = None
        if callback is not None:
            token = f"avo-{next(self._progress_ids)}"
            params["_meta"] = {"progressToken": token}
            self._progress[token] = (name, callback)
        call = pending or PendingCall(name)
        self._calls.append(call)
        current = _CALL.set(call)
        try:
            result = await self.request("tools/call", params)
        finally:
            _CALL.reset(current)
            self._calls.remove(call)
            if token is not None:
                self._progress.pop(token, None)
        wrapped: JsonDict = {
            "name": name,
            "is_error": bool(result.get("isError")),
            "result": result,
        }
        text = content_text(result.get("content"))
        if text is not None:
            wrapped["text"] = text
        return wrapped

    # ------------------------------------------------- server -> client messages

    def _remember_call(self, request_id: Any) -> None:
        """Note which tool call (if any) the request ``request_id`` is sent for."""
        call = _CALL.get()
        if call is not None:
            self._calls_by_request[request_id] = call

    def _forget_call(self, request_id: Any) -> None:
        self._calls_by_request.pop(request_id, None)

    def _call_of(self, request_id: Any) -> PendingCall | None:
        """The tool call the request ``request_id`` was sent for (None: unknown)."""
        return self._calls_by_request.get(request_id) if request_id is not None else None

    async def _server_request(self, message: JsonDict, call: PendingCall | None = None) -> JsonDict:
        """Answer one request the server sent (ping, roots, sampling); never raises.

        ``call``: the tool call it arrived with, when the transport can tell (the
        answer stream of that call's request); else an elicitation or a sampling
        request belongs to the only call in flight, if there is exactly one.
        """
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        try:
            if method == "ping":
                return result_response(request_id, {})
            if method == "roots/list" and self.features.roots is not None:
                return result_response(request_id, {"roots": self.features.root_list()})
            if call is None and len(self._calls) == 1:
                call = self._calls[0]
            if method == "sampling/createMessage" and self.features.sampling is not None:
                request = sampling_request(self.name, params, call)
                return result_response(request_id, await self.features.sampling(request))
            if method == "elicitation/create" and self.features.elicitation is not None:
                asked = elicitation_request(self.name, params, call)
                return result_response(request_id, await self.features.elicitation(asked))
        except Exception as exc:
            return error_response(request_id, INTERNAL_ERROR, str(exc))
        return error_response(
            request_id, METHOD_NOT_FOUND, f"method not found: {method} (not offered by avo)"
        )

    def _server_notification(self, message: JsonDict) -> None:
        """Handle one notification the server sent (progress, list_changed, logs)."""
        method = message.get("method")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "notifications/progress":
            entry = self._progress.get(str(params.get("progressToken")))
            progress = params.get("progress")
            if entry is None or not isinstance(progress, int | float):
                return
            total = params.get("total")
            note = params.get("message")
            update = ProgressUpdate(
                server=self.name,
                tool=entry[0],
                progress=float(progress),
                total=float(total) if isinstance(total, int | float) else None,
                message=note if isinstance(note, str) else None,
            )
            try:
                entry[1](update)
            except Exception:
                logger.exception("MCP progress callback failed for server %r", self.name)
        elif method == "notifications/tools/list_changed" and self._started:
            self._spawn(self._refresh_quietly())
        elif method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            logger.log(level, "MCP server %r: %s", self.name, params.get("data"))

    async def _refresh_quietly(self) -> None:
        try:
            await self.refresh_tools()
        except MCPError as exc:
            logger.warning("MCP server %r: cannot refresh its tool list: %s", self.name, exc)

    def _spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _cancel_background(self) -> None:
        tasks, self._background = list(self._background), set()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


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
