"""The MCP streamable HTTP client transport.

Every JSON-RPC message is POSTed to the server's endpoint (``.../mcp``) with
``Accept: application/json, text/event-stream``. The answer to a request comes
back either as one JSON body or as a server-sent-event stream that carries it
(possibly after notifications or server requests). The server's
``Mcp-Session-Id`` is echoed on every later message, along with
``MCP-Protocol-Version``; :meth:`MCPHttpServer.stop` ends the session with a
DELETE. Transport failures, HTTP errors and timeouts all raise
:class:`~avo.exceptions.MCPError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from avo.exceptions import MCPError
from avo_mcp.framing import METHOD_NOT_FOUND, JsonDict, error_response, result_response
from avo_mcp.session import DEFAULT_TIMEOUT_SECONDS, MCPSession

_ERROR_BODY_PREVIEW = 200


class MCPHttpServer(MCPSession):
    """An MCP server reached over streamable HTTP at ``url``."""

    def __init__(
        self,
        *,
        url: str,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        startup_timeout_seconds: float | None = None,
        transport: Any = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise MCPError(f"MCP server URL must be http(s)://host/..., got {url!r}")
        super().__init__(
            name=name or parts.hostname,
            timeout_seconds=timeout_seconds,
            startup_timeout_seconds=startup_timeout_seconds,
        )
        self.url = url
        self.headers = dict(headers or {})
        self._transport = transport
        self._client: Any = None
        self._session_id: str | None = None
        self._ids = itertools.count(1)

    @property
    def session_id(self) -> str | None:
        """The server-assigned ``Mcp-Session-Id`` (None for stateless servers)."""
        return self._session_id

    async def _open(self) -> None:
        import httpx  # lazily: importing avo_mcp must stay cheap

        self._failure = None
        self._session_id = None
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.startup_timeout_seconds),
            transport=self._transport,
            trust_env=False,
        )

    async def stop(self) -> None:
        """End the session (DELETE, best effort) and close the HTTP client."""
        self._started = False
        client, self._client = self._client, None
        if client is None:
            return
        try:
            if self._session_id is not None:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(5):
                        await client.delete(self.url, headers=self._headers())
        finally:
            await client.aclose()
            self._session_id = None

    def _headers(self) -> dict[str, str]:
        headers = {
            **self.headers,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        if self._protocol_version is not None:
            headers["MCP-Protocol-Version"] = self._protocol_version
        return headers

    async def _notify(self, method: str, params: JsonDict | None) -> None:
        message: JsonDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        async with asyncio.timeout(self.timeout_seconds):
            await self._post(message, method, expect_id=None)

    async def _request(self, method: str, params: JsonDict | None, wait_seconds: float) -> JsonDict:
        if self._client is None:
            raise MCPError(f"MCP server {self.name!r} is not connected; call start() first")
        request_id = next(self._ids)
        message: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            async with asyncio.timeout(wait_seconds):
                reply = await self._post(message, method, expect_id=request_id)
        except TimeoutError:
            with contextlib.suppress(MCPError, TimeoutError):
                await self._notify(
                    "notifications/cancelled", {"requestId": request_id, "reason": "timed out"}
                )
            raise MCPError(
                f"MCP server {self.name!r} did not answer {method} within {wait_seconds:g} seconds"
            ) from None
        assert reply is not None
        error = reply.get("error")
        if isinstance(error, dict):
            raise MCPError(
                f"MCP server {self.name!r} returned error {error.get('code')}: "
                f"{error.get('message')}"
            )
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    async def _post(
        self, message: JsonDict, method: str, *, expect_id: int | None
    ) -> JsonDict | None:
        import httpx

        client = self._client
        if client is None:
            raise MCPError(f"MCP server {self.name!r} is not connected; call start() first")
        try:
            async with client.stream(
                "POST", self.url, content=json.dumps(message), headers=self._headers()
            ) as response:
                if response.status_code >= 400:
                    body = (await response.aread()).decode("utf-8", errors="replace")
                    raise MCPError(
                        f"MCP server {self.name!r} answered {method} with HTTP "
                        f"{response.status_code}: {body[:_ERROR_BODY_PREVIEW]}"
                    )
                if method == "initialize":
                    self._session_id = response.headers.get("mcp-session-id") or None
                if expect_id is None:
                    return None
                content_type = response.headers.get("content-type", "").split(";")[0].strip()
                if content_type == "text/event-stream":
                    return await self._from_event_stream(response, method, expect_id)
                if content_type == "application/json":
                    return self._match(json.loads(await response.aread()), method, expect_id)
                raise MCPError(
                    f"MCP server {self.name!r} answered {method} with unexpected content type "
                    f"{content_type or '(none)'!r}"
                )
        except httpx.HTTPError as exc:
            raise MCPError(
                f"cannot reach MCP server {self.name!r} at {self.url}: {type(exc).__name__}: {exc}"
            ) from exc
        except ValueError as exc:  # JSON decoding
            raise MCPError(
                f"MCP server {self.name!r} sent invalid JSON for {method}: {exc}"
            ) from exc

    def _match(self, payload: Any, method: str, expect_id: int) -> JsonDict:
        for message in payload if isinstance(payload, list) else [payload]:
            if (
                isinstance(message, dict)
                and message.get("id") == expect_id
                and "method" not in message
            ):
                return message
        raise MCPError(f"MCP server {self.name!r} sent no answer to {method} (id {expect_id})")

    async def _from_event_stream(self, response: Any, method: str, expect_id: int) -> JsonDict:
        data: list[str] = []
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
                continue
            if line or not data:
                continue  # event:, id:, retry:, comments, or an empty event
            message = json.loads("\n".join(data))
            data = []
            if not isinstance(message, dict):
                continue
            if "method" in message:
                if "id" in message:  # a server -> client request: answer, never leave it hanging
                    reply = (
                        result_response(message["id"], {})
                        if message["method"] == "ping"
                        else error_response(
                            message["id"],
                            METHOD_NOT_FOUND,
                            f"method not found: {message['method']}",
                        )
                    )
                    await self._post(reply, str(message["method"]), expect_id=None)
                continue
            if message.get("id") == expect_id:
                return message
        raise MCPError(
            f"MCP server {self.name!r} closed the event stream before answering {method}"
        )

    def __repr__(self) -> str:
        return f"MCPHttpServer(name={self.name!r}, url={self.url!r})"


__all__ = ["MCPHttpServer"]
