"""Serve an avo ``ToolRegistry`` (and the workspace, as resources) over MCP stdio.

:class:`AvoMcpServer` answers one JSON-RPC message at a time
(:meth:`AvoMcpServer.handle`); :func:`serve_stdio_async` reads newline-delimited
messages, runs each request as its own task (so ``ping`` and
``notifications/cancelled`` work while a tool runs) and writes the answers.

While serving the real stdio, fd 1 is pointed at stderr and the protocol is
written to a private duplicate: a tool that prints, or a subprocess it starts,
cannot corrupt the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from avo.models import ToolCall, ToolMetadata, ToolRisk
from avo.risk import ARGUMENT_KIND_HINT
from avo.tools import ToolRegistry
from avo_mcp.framing import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_NOT_INITIALIZED,
    FramingError,
    JsonDict,
    decode_message,
    encode_message,
    error_response,
    read_line,
    result_response,
)
from avo_mcp.notify import notifying, progress_relay
from avo_mcp.resources import ResourceError, WorkspaceResources

DEFAULT_PROTOCOL_VERSION = "2025-06-18"
"""Answered when the client's initialize names no protocol version."""

CAPABILITIES: JsonDict = {
    "tools": {"listChanged": False},
    "resources": {"subscribe": False, "listChanged": False},
    "logging": {},
    "completions": {},
}
"""What a server with a workspace declares (without one, ``resources`` is left out).

No ``prompts``: avo serves no prompts, so it does not claim to.
"""

ReadFn = Callable[[], bytes | str]
WriteFn = Callable[[str], Any]
ToolContext = Callable[[], AbstractContextManager[Any]]


def required_tool_names(environ: Mapping[str, str] | None = None) -> set[str]:
    """Tool names listed in ``AVO_TOOLS_REQUIRE_APPROVAL`` (comma/space/newline separated)."""
    env = os.environ if environ is None else environ
    return {name for name in re.split(r"[,\s]+", env.get("AVO_TOOLS_REQUIRE_APPROVAL", "")) if name}


def tool_annotations(metadata: ToolMetadata, *, approval_required: set[str]) -> JsonDict:
    """MCP annotations from the tool's declared risk class (``effective_risk``)."""
    if metadata.effective_risk is ToolRisk.INSPECT:
        annotations: JsonDict = {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }
    else:  # MODIFY, EXECUTE, or undeclared (treated as EXECUTE)
        annotations = {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False}
    if metadata.name in approval_required:
        annotations.update(destructiveHint=True, openWorldHint=True)
    return annotations


def _tool_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False)


def with_kind_hints(schema: JsonDict, kinds: Mapping[str, Any]) -> JsonDict:
    """``schema`` with ``"x-avo-kind"`` back on each argument the tool declares a kind for.

    avo keeps the hint out of what a model is shown; an MCP client that reads it
    (an avo client turns it into ``argument_kinds``, so permission rules read
    the arguments) gets it back here. Pointers are ``path``, ``paths[]``,
    ``patches[].path`` (local ``#/$defs/...`` references are followed); an
    argument the schema does not spell out gets no hint.
    """
    if not kinds:
        return schema
    marked = copy.deepcopy(schema)
    for pointer, kind in kinds.items():
        node: Any = marked
        for part in pointer.split("."):
            many = part.endswith("[]")
            node = _local_ref(marked, node)
            properties = node.get("properties") if isinstance(node, dict) else None
            node = properties.get(part.removesuffix("[]")) if isinstance(properties, dict) else None
            if many and isinstance(node, dict):
                node = node.get("items")
        if isinstance(node, dict):
            node[ARGUMENT_KIND_HINT] = getattr(kind, "value", str(kind))
    return marked


def _local_ref(root: JsonDict, node: Any) -> Any:
    ref = node.get("$ref") if isinstance(node, dict) else None
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        defs = root.get("$defs")
        return defs.get(ref.removeprefix("#/$defs/")) if isinstance(defs, dict) else None
    return node


class AvoMcpServer:
    """An MCP server over an avo tool registry and an optional workspace root."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        server_name: str = "avo",
        server_version: str = "0.1.7",
        workspace_root: str | os.PathLike[str] | None = None,
        tool_context: ToolContext | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.registry = registry
        self.server_name = server_name
        self.server_version = server_version
        self.workspace_root = Path(workspace_root).resolve() if workspace_root else None
        self.resources = WorkspaceResources(self.workspace_root) if self.workspace_root else None
        self.tool_context = tool_context or _default_tool_context(self.workspace_root)
        self.environ = environ
        self.initialized = False
        self.shut_down = False
        self.protocol_version: str | None = None
        self._in_flight: dict[Any, asyncio.Task[None]] = {}

    # -------------------------------------------------------------- dispatch

    async def handle(self, message: JsonDict) -> JsonDict | None:
        """Answer one decoded message; None for notifications and responses."""
        method = message.get("method")
        if "id" not in message:
            if method == "notifications/cancelled":
                params = message.get("params")
                request_id = params.get("requestId") if isinstance(params, dict) else None
                task = self._in_flight.get(request_id) if _valid_id(request_id) else None
                if task is not None:
                    task.cancel()
            return None
        request_id = message["id"]
        if not _valid_id(request_id):
            return error_response(None, INVALID_REQUEST, "request id must be a string or number")
        if not isinstance(method, str):
            if "result" in message or "error" in message:
                return None  # a response to a request we never send
            return error_response(request_id, INVALID_REQUEST, "request has no method")
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return error_response(request_id, INVALID_PARAMS, "params must be an object")
        gate = self._gate(method)
        if gate is not None:
            return error_response(request_id, SERVER_NOT_INITIALIZED, gate)
        handler = self._HANDLERS.get(method)
        if handler is None:
            return error_response(request_id, METHOD_NOT_FOUND, f"method not found: {method}")
        try:
            return result_response(request_id, await handler(self, params))
        except ResourceError as exc:
            return error_response(request_id, exc.code, self.scrub(str(exc)))
        except _InvalidParams as exc:
            return error_response(request_id, INVALID_PARAMS, self.scrub(str(exc)))
        except Exception as exc:
            return error_response(
                request_id, INTERNAL_ERROR, self.scrub(f"{type(exc).__name__}: {exc}")
            )

    def scrub(self, text: str) -> str:
        """``text`` without absolute host paths: the workspace becomes relative paths.

        Paths inside the workspace are shown relative to it, the home
        directory as ``~``, any other absolute path as ``<host path>``. A
        client (and the model behind it) never learns the host's layout.
        """
        return scrub_paths(text, self.workspace_root)

    def _gate(self, method: str) -> str | None:
        if method == "ping":
            return None  # the MCP spec allows ping at any time
        if self.shut_down:
            return f"server has shut down; {method} refused"
        if not self.initialized and method != "initialize":
            return f"server not initialized; send initialize before {method}"
        return None

    async def _initialize(self, params: JsonDict) -> JsonDict:
        requested = params.get("protocolVersion")
        if requested is None:
            version = DEFAULT_PROTOCOL_VERSION
        elif requested in HANDSHAKE_PROTOCOL_VERSIONS:
            version = requested
        else:
            version = HANDSHAKE_PROTOCOL_VERSIONS[-1]
        self.protocol_version = version
        self.initialized = True
        capabilities = json.loads(json.dumps(CAPABILITIES))
        if self.resources is None:
            del capabilities["resources"]
        return {
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": self.server_name, "version": self.server_version},
        }

    async def _ping(self, params: JsonDict) -> JsonDict:
        return {}

    async def _shutdown(self, params: JsonDict) -> JsonDict:
        self.shut_down = True
        return {}

    async def _tools_list(self, params: JsonDict) -> JsonDict:
        required = required_tool_names(self.environ)
        return {
            "tools": [
                {
                    "name": metadata.name,
                    "description": metadata.description,
                    "inputSchema": with_kind_hints(metadata.input_schema, metadata.argument_kinds),
                    "annotations": tool_annotations(metadata, approval_required=required),
                }
                for metadata in self.registry.metadata
            ]
        }

    async def _tools_call(self, params: JsonDict) -> JsonDict:
        from avo.tool_progress import reporting_to

        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise _InvalidParams("tools/call needs a tool name in params.name")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise _InvalidParams(f"tools/call arguments for {name!r} must be an object")
        call = ToolCall(name=name, arguments=arguments)
        with self.tool_context(), reporting_to(progress_relay(params)):
            # Per-call idempotency belongs to the MCP client: each call is fresh here.
            result = await self.registry.invoke(call, completed_tool_call_ids=set())
        if not result.success:
            return {
                "content": [{"type": "text", "text": self.scrub(result.error or "tool failed")}],
                "isError": True,
            }
        answer: JsonDict = {
            "content": [{"type": "text", "text": _tool_text(result.output)}],
            "isError": False,
        }
        if isinstance(result.output, dict):
            answer["structuredContent"] = result.output
        return answer

    async def _resources_list(self, params: JsonDict) -> JsonDict:
        return {"resources": self.resources.listing() if self.resources else []}

    async def _resources_read(self, params: JsonDict) -> JsonDict:
        if self.resources is None:
            raise ResourceError(INVALID_PARAMS, "this server has no workspace resources")
        return {"contents": self.resources.read(params.get("uri"))}  # type: ignore[arg-type]

    async def _resources_templates(self, params: JsonDict) -> JsonDict:
        return {"resourceTemplates": self.resources.templates() if self.resources else []}

    async def _set_level(self, params: JsonDict) -> JsonDict:
        return {}

    async def _complete(self, params: JsonDict) -> JsonDict:
        return {"completion": {"values": [], "hasMore": False}}

    _HANDLERS: ClassVar[dict[str, Callable[[AvoMcpServer, JsonDict], Any]]] = {
        "initialize": _initialize,
        "ping": _ping,
        "shutdown": _shutdown,
        "tools/list": _tools_list,
        "tools/call": _tools_call,
        "resources/list": _resources_list,
        "resources/read": _resources_read,
        "resources/templates/list": _resources_templates,
        "logging/setLevel": _set_level,
        "completion/complete": _complete,
    }

    # --------------------------------------------------------------- serving

    async def serve(self, read_fn: ReadFn, write_fn: WriteFn) -> None:
        """Read messages until end of input; each request runs as its own task."""

        wire_closed = False

        def write(message: JsonDict) -> None:
            nonlocal wire_closed
            if wire_closed:
                return
            try:
                write_fn(encode_message(message).decode("utf-8"))
            except (BrokenPipeError, ConnectionResetError):
                wire_closed = True  # the client is gone; stop at the next read

        async def answer(message: JsonDict) -> None:
            notifying(write)  # (this task's own context) a served tool's progress
            try:
                reply = await self.handle(message)
            except asyncio.CancelledError:
                return  # cancelled by the client: MCP says send nothing
            finally:
                self._in_flight.pop(message.get("id"), None)
            if reply is not None:
                write(reply)

        while not wire_closed:
            try:
                raw = await asyncio.to_thread(read_fn)
            except FramingError as exc:  # a line too long (read_line): dropped unread
                write(error_response(None, PARSE_ERROR, str(exc)))
                continue
            if not raw:
                break
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
            if not data.strip():
                continue
            try:
                message = decode_message(data)
            except FramingError as exc:
                write(error_response(None, PARSE_ERROR, str(exc)))
                continue
            if (
                "id" in message
                and _valid_id(message["id"])
                and isinstance(message.get("method"), str)
            ):
                task = asyncio.create_task(answer(message))
                self._in_flight[message["id"]] = task
            else:
                reply = await self.handle(message)
                if reply is not None:
                    write(reply)
        if self._in_flight:
            await asyncio.gather(*self._in_flight.values(), return_exceptions=True)

    def serve_stdio(
        self, *, read_fn: ReadFn | None = None, write_fn: WriteFn | None = None
    ) -> None:
        """Serve until stdin closes (blocking; runs its own event loop)."""
        asyncio.run(self.serve_stdio_async(read_fn=read_fn, write_fn=write_fn))

    async def serve_stdio_async(
        self, *, read_fn: ReadFn | None = None, write_fn: WriteFn | None = None
    ) -> None:
        """Serve on the given functions, or on the process's stdin/stdout."""
        if read_fn is not None and write_fn is not None:
            await self.serve(read_fn, write_fn)
            return
        with _claim_stdio() as (stdin_readline, wire_write):
            await self.serve(read_fn or stdin_readline, write_fn or wire_write)

    def run_forever(
        self, *, read_fn: ReadFn | None = None, write_fn: WriteFn | None = None
    ) -> None:
        """Alias of :meth:`serve_stdio` (``asyncio.run`` wrapper)."""
        self.serve_stdio(read_fn=read_fn, write_fn=write_fn)


_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~-])/(?:[^\s'\"`:,;)\]}]+)")


def scrub_paths(text: str, workspace_root: Path | None) -> str:
    """Replace absolute host paths in ``text`` (see :meth:`AvoMcpServer.scrub`)."""
    if workspace_root is not None:
        root = str(workspace_root)
        text = text.replace(root + os.sep, "").replace(root, ".")
    home = str(Path.home())
    if home not in ("/", ""):
        text = re.sub(re.escape(home) + r"(?=/|\b)", "~", text)
    return _ABSOLUTE_PATH.sub("<host path>", text)


def _valid_id(value: Any) -> bool:
    """JSON-RPC ids are strings or numbers (null is only for unknowable ids)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)


class _InvalidParams(Exception):
    """Bad request parameters (JSON-RPC -32602)."""


def _default_tool_context(workspace_root: Path | None) -> ToolContext:
    """Bind the workspace for avo_tools' workspace tools when a root is given."""
    if workspace_root is None:
        return contextlib.nullcontext
    try:
        from avo_tools import bind_workspace
    except ImportError:  # pragma: no cover - avo-tools is a declared dependency
        return contextlib.nullcontext
    return lambda: bind_workspace(workspace_root)


@contextlib.contextmanager
def _claim_stdio() -> Iterator[tuple[ReadFn, WriteFn]]:
    """Own the stdio wire: protocol on a private dup of fd 1, fd 1 -> stderr."""
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr
    wire = os.fdopen(wire_fd, "wb")

    def write(line: str) -> None:
        wire.write(line.encode("utf-8"))
        wire.flush()

    try:
        yield partial(read_line, sys.stdin.buffer), write
    finally:
        sys.stdout = saved_stdout
        with contextlib.suppress(OSError):
            wire.flush()
            os.dup2(wire.fileno(), 1)
        wire.close()


def serve_stdio(
    registry: ToolRegistry,
    *,
    server_name: str = "avo",
    server_version: str = "0.1.7",
    workspace_root: str | os.PathLike[str] | None = None,
    read_fn: ReadFn | None = None,
    write_fn: WriteFn | None = None,
) -> None:
    """Serve ``registry`` over MCP stdio until end of input (blocking)."""
    server = AvoMcpServer(
        registry,
        server_name=server_name,
        server_version=server_version,
        workspace_root=workspace_root,
    )
    server.serve_stdio(read_fn=read_fn, write_fn=write_fn)


async def serve_stdio_async(
    registry: ToolRegistry,
    *,
    server_name: str = "avo",
    server_version: str = "0.1.7",
    workspace_root: str | os.PathLike[str] | None = None,
    read_fn: ReadFn | None = None,
    write_fn: WriteFn | None = None,
) -> None:
    """Async form of :func:`serve_stdio`."""
    server = AvoMcpServer(
        registry,
        server_name=server_name,
        server_version=server_version,
        workspace_root=workspace_root,
    )
    await server.serve_stdio_async(read_fn=read_fn, write_fn=write_fn)


__all__ = [
    "CAPABILITIES",
    "DEFAULT_PROTOCOL_VERSION",
    "AvoMcpServer",
    "required_tool_names",
    "scrub_paths",
    "serve_stdio",
    "serve_stdio_async",
    "tool_annotations",
]
