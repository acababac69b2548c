"""The MCP streamable HTTP client transport.

Every JSON-RPC message is POSTed to the server's endpoint (``.../mcp``) with
``Accept: application/json, text/event-stream``. The answer to a request comes
back as one JSON body or on a server-sent-event stream (possibly after
notifications and requests of the server's own). The server's
``Mcp-Session-Id`` is echoed on every later message, with
``MCP-Protocol-Version``; :meth:`MCPHttpServer.stop` ends the session with a
DELETE.

Resumability: every response is matched to its request by id, whichever
stream carries it. When a stream ends, or its connection drops, before the
answer arrived and the server gave its events ids (servers open with a
*priming* event for that), the client waits the server's ``retry:`` delay and
resumes with ``GET`` + ``Last-Event-ID``. After the handshake the client also opens the standalone
``GET`` stream, where a server sends requests and notifications unrelated to a
call (a 405 means the server has none). Server requests are answered by the
session (ping, roots, sampling) with a POST.

A ``404`` to a message carrying ``Mcp-Session-Id``: the server ended the session,
so the client starts a new one (``initialize`` again, as MCP requires) and sends
the request again (never taken). A resumption (always in the stream's own
session) answered ``404`` fails its call: the request may have run.

A ``401`` means the server wants OAuth authorization: with ``auth=`` (an
:class:`~avo_mcp.oauth.OAuthClient`) the client refreshes or authorizes and
sends the request again; without, the error names ``avo mcp login`` and the
header-token path.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from avo.exceptions import MCPError
from avo_mcp import http_read
from avo_mcp.features import ClientFeatures
from avo_mcp.framing import JsonDict
from avo_mcp.naming import default_http_server_name
from avo_mcp.oauth import MCPAuthError, OAuthClient
from avo_mcp.session import DEFAULT_TIMEOUT_SECONDS, MCPSession
from avo_mcp.sse import EventStreamState

logger = logging.getLogger("avo_mcp")

_ERROR_BODY_PREVIEW = 200
_MAX_RESUMPTIONS = 5
_GET_STREAM_MAX_RETRIES = 5
_GET_STREAM_OPEN_SECONDS = 5.0
_RESOURCE_METADATA = re.compile(r'resource_metadata="?([^",\s]+)"?')
_MAX_AUTH_ROUNDS = 4


class _Challenge(Exception):
    """A 401/403 with a ``WWW-Authenticate`` challenge (handled by ``auth``, or reported)."""

    def __init__(self, server: MCPHttpServer, status: int, header: str) -> None:
        super().__init__(header)
        self.server = server
        self.status = status
        self.header = header

    def error(self) -> MCPError:
        server = self.server
        if self.status == 403:
            return MCPAuthError(
                f"MCP server {server.name!r} refused the request: the token lacks a scope "
                f"({self.header})"
            )
        found = _RESOURCE_METADATA.search(self.header)
        where = f" (its authorization metadata: {found.group(1)})" if found else ""
        return MCPAuthError(
            f"MCP server {server.name!r} at {server.url} requires OAuth authorization{where}; "
            f"run `avo mcp login {server.name}` (it opens a browser), or get an access token "
            f"from the service and add it as a header: avo mcp add {server.name} --url "
            f'{server.url} --header "Authorization: Bearer ${{TOKEN}}"'
        )


class _SessionGone(MCPError):
    """A ``404`` to a message that carried ``Mcp-Session-Id`` (the argument): it ended."""


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
        features: ClientFeatures | None = None,
        listen: bool = True,
        auth: OAuthClient | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise MCPError(f"MCP server URL must be http(s)://host/..., got {url!r}")
        super().__init__(
            name=name or default_http_server_name(url),
            timeout_seconds=timeout_seconds,
            startup_timeout_seconds=startup_timeout_seconds,
            features=features,
        )
        self.url = url
        self.headers = dict(headers or {})
        self.listen = listen
        self.auth = auth
        self._bearer: str | None = None
        self._transport = transport
        self._client: Any = None
        self._session_id: str | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[JsonDict]] = {}
        self._get_stream: asyncio.Task[None] | None = None
        self._renewing = asyncio.Lock()

    @property
    def session_id(self) -> str | None:
        """The server-assigned ``Mcp-Session-Id`` (None for stateless servers)."""
        return self._session_id

    # -------------------------------------------------------------- lifecycle

    async def _open(self) -> None:
        import httpx  # lazily: importing avo_mcp must stay cheap

        self._failure = None
        self._session_id = None
        self._client = httpx.AsyncClient(
            # Event streams may stay quiet for long: reads are unbounded here and
            # every request is bounded by its own timeout instead.
            timeout=httpx.Timeout(self.startup_timeout_seconds, read=None),
            transport=self._transport,
            trust_env=False,
        )
        if self.auth is not None:
            self._bearer = await self.auth.access_token(self._client)

    async def _after_initialized(self) -> None:
        """Open the standalone GET stream (``listen``) before anything else is sent.

        A server may send requests there at once (after ``initialized``); one
        that finds no stream open drops them, and the call that caused them
        would hang. So the handshake waits (briefly) until the stream is open.
        """
        if not self.listen or self._get_stream is not None:
            return
        opened = asyncio.Event()
        self._get_stream = asyncio.get_running_loop().create_task(
            self._listen(opened), name=f"mcp-get-{self.name}"
        )
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_GET_STREAM_OPEN_SECONDS):
                await opened.wait()

    async def stop(self) -> None:
        """End the session (DELETE, best effort) and close the HTTP client."""
        self._started = False
        stream, self._get_stream = self._get_stream, None
        if stream is not None:
            stream.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await stream
        await self._cancel_background()
        client, self._client = self._client, None
        for future in self._pending.values():
            if not future.done():
                future.set_exception(MCPError(f"MCP server {self.name!r} was stopped"))
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

    def _headers(self, *, accept: str = "application/json, text/event-stream") -> dict[str, str]:
        headers = {**self.headers, "Accept": accept}
        if self._bearer is not None and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = f"Bearer {self._bearer}"
        if accept != "text/event-stream":
            headers["Content-Type"] = "application/json"
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        if self._protocol_version is not None:
            headers["MCP-Protocol-Version"] = self._protocol_version
        return headers

    # ---------------------------------------------------------------- sending

    async def _notify(self, method: str, params: JsonDict | None) -> None:
        message: JsonDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        async with asyncio.timeout(self.timeout_seconds):
            await self._post(message, method)

    async def _request(self, method: str, params: JsonDict | None, wait_seconds: float) -> JsonDict:
        if self._client is None:
            raise MCPError(f"MCP server {self.name!r} is not connected; call start() first")
        request_id = next(self._ids)
        message: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        future: asyncio.Future[JsonDict] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._remember_call(request_id)
        try:
            async with asyncio.timeout(wait_seconds):
                await self._post(message, method, future=future)
                reply = await future
        except TimeoutError:
            with contextlib.suppress(MCPError, TimeoutError):
                await self._notify(
                    "notifications/cancelled", {"requestId": request_id, "reason": "timed out"}
                )
            raise MCPError(
                f"MCP server {self.name!r} did not answer {method} within {wait_seconds:g} seconds"
            ) from None
        finally:
            self._pending.pop(request_id, None)
            self._forget_call(request_id)
        error = reply.get("error")
        if isinstance(error, dict):
            raise MCPError(
                f"MCP server {self.name!r} returned error {error.get('code')}: "
                f"{error.get('message')}"
            )
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    async def _post(
        self, message: JsonDict, method: str, *, future: asyncio.Future[JsonDict] | None = None
    ) -> None:
        """POST one message, authorizing (and sending it again) when the server asks, and
        starting a new session (and sending a request again) when it ended the last one."""
        renewed = False
        for _ in range(_MAX_AUTH_ROUNDS):
            try:
                await self._post_once(message, method, future=future)
            except _SessionGone as gone:
                if renewed or method in ("initialize", "notifications/initialized"):
                    raise MCPError(
                        f"MCP server {self.name!r} answered {method} with HTTP 404 for session "
                        f"{gone.args[0]} again after a new session began"
                    ) from None
                await self._renew_session(gone.args[0])
                renewed = True
                if "id" not in message or "method" not in message:
                    return  # a notification or an answer for the session that ended
                continue  # the server never took the request: send it in the new session
            except _Challenge as challenge:
                if self.auth is None or self._client is None:
                    raise challenge.error() from None
                if challenge.status == 401:
                    self._bearer = await self.auth.unauthorized(self._client, challenge.header)
                else:
                    token = await self.auth.forbidden(self._client, challenge.header)
                    if token is None:
                        raise challenge.error() from None
                    self._bearer = token
                continue
            if self.auth is not None:
                self.auth.succeeded()
            return
        raise MCPAuthError(
            f"MCP server {self.name!r} still refuses {method} after authorizing again"
        )

    async def _renew_session(self, ended: str) -> None:
        """The server ended session ``ended`` (a ``404``): start a new one, as MCP says a
        client must (once, however many requests learn of it together)."""
        async with self._renewing:
            if self._session_id != ended:
                return  # another request already began the new session
            logger.info("MCP server %r ended session %s; starting a new one", self.name, ended)
            self._session_id = None
            stream, self._get_stream = self._get_stream, None
            if stream is not None:
                stream.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await stream
            await self._handshake()

    async def _post_once(
        self, message: JsonDict, method: str, *, future: asyncio.Future[JsonDict] | None = None
    ) -> None:
        """POST one message; for a request, read its answer from the body or stream."""
        import httpx

        client = self._client
        if client is None:
            raise MCPError(f"MCP server {self.name!r} is not connected; call start() first")
        try:
            async with client.stream(
                "POST", self.url, content=json.dumps(message), headers=self._headers()
            ) as response:
                await self._check_status(response, method)
                if method == "initialize":
                    self._session_id = response.headers.get("mcp-session-id") or None
                if future is None:
                    return
                content_type = response.headers.get("content-type", "").split(";")[0].strip()
                origin = message.get("id")
                if content_type == "text/event-stream":
                    state = EventStreamState(server=self.name)
                    try:
                        await self._consume(response, state, until=future, origin=origin)
                    except httpx.TransportError as exc:  # the connection dropped mid-stream
                        if state.last_event_id is None:
                            raise  # nothing to resume from
                        logger.debug("MCP server %r: stream dropped: %s", self.name, exc)
                    if not future.done():
                        session = response.request.headers.get("mcp-session-id")
                        await self._resume(state, method, future, origin, session)
                    return
                if content_type == "application/json":
                    payload = json.loads(await http_read.body(response, self.name))
                    for item in payload if isinstance(payload, list) else [payload]:
                        if isinstance(item, dict):
                            await self._dispatch(item, origin)
                    if not future.done():
                        raise MCPError(
                            f"MCP server {self.name!r} sent no answer to {method} "
                            f"(id {message.get('id')})"
                        )
                    return
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

    async def _check_status(self, response: Any, method: str) -> None:
        if response.status_code < 400:
            return
        body = (await http_read.body(response, self.name)).decode("utf-8", errors="replace")
        header = response.headers.get("www-authenticate", "")
        if response.status_code == 401 or (
            response.status_code == 403 and "insufficient_scope" in header
        ):
            raise _Challenge(self, response.status_code, header)
        sent = response.request.headers.get("mcp-session-id")
        if response.status_code == 404 and sent is not None:
            raise _SessionGone(sent)
        raise MCPError(
            f"MCP server {self.name!r} answered {method} with HTTP "
            f"{response.status_code}: {body[:_ERROR_BODY_PREVIEW]}"
        )

    # ------------------------------------------------------------ event streams

    async def _consume(
        self,
        response: Any,
        state: EventStreamState,
        *,
        until: asyncio.Future[JsonDict] | None = None,
        origin: Any = None,
    ) -> None:
        """Dispatch the stream's messages until it ends (or ``until`` is answered).

        ``origin``: the id of the request whose answer stream this is (a server's
        request on it belongs to that request: an elicitation to that tool call).
        """
        async for event in state.events(http_read.lines(response.aiter_text(), self.name)):
            if event.event != "message" or not event.data.strip():
                continue  # a priming event, or an event type MCP does not use
            try:
                message = json.loads(event.data)
            except ValueError:
                raise MCPError(
                    f"MCP server {self.name!r} sent an event that is not JSON: {event.data[:80]!r}"
                ) from None
            for item in message if isinstance(message, list) else [message]:
                if isinstance(item, dict):
                    await self._dispatch(item, origin)
            if until is not None and until.done():
                return

    async def _resume(
        self,
        state: EventStreamState,
        method: str,
        future: asyncio.Future[JsonDict],
        origin: Any = None,
        session: str | None = None,
    ) -> None:
        """Reconnect with GET + Last-Event-ID until ``future`` is answered, in ``session``
        (the stream's own, even when a new session began since)."""
        import httpx

        for _ in range(_MAX_RESUMPTIONS):
            if future.done():
                return
            if state.last_event_id is None:
                break  # nothing to resume from
            await asyncio.sleep(state.retry_seconds)
            client = self._client
            if client is None:
                break
            headers = self._headers(accept="text/event-stream")
            headers["Last-Event-ID"] = state.last_event_id
            if session is not None:
                headers["Mcp-Session-Id"] = session
            try:
                async with client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code == 404 and session is not None:
                        raise MCPError(
                            f"MCP server {self.name!r} ended session {session} "
                            f"while {method} ran: its answer is lost (the request may have run; "
                            "the next request starts a new session)"
                        )
                    if response.status_code >= 400:
                        break
                    await self._consume(response, state, until=future, origin=origin)
            except httpx.HTTPError as exc:
                logger.debug("MCP server %r: resumption failed: %s", self.name, exc)
        if not future.done():
            raise MCPError(
                f"MCP server {self.name!r} closed the event stream before answering {method}"
            )

    async def _listen(self, opened: asyncio.Event) -> None:
        """The standalone GET stream: server requests and notifications between calls."""
        import httpx

        state = EventStreamState(server=self.name)
        failures = 0
        try:
            while self._client is not None and failures < _GET_STREAM_MAX_RETRIES:
                headers = self._headers(accept="text/event-stream")
                if state.last_event_id is not None:
                    headers["Last-Event-ID"] = state.last_event_id
                try:
                    async with self._client.stream("GET", self.url, headers=headers) as response:
                        content_type = response.headers.get("content-type", "")
                        if response.status_code >= 400 or not content_type.startswith(
                            "text/event-stream"
                        ):
                            return  # 405: the server offers no standalone stream
                        failures = 0
                        opened.set()
                        await self._consume(response, state)
                except (httpx.HTTPError, MCPError) as exc:
                    failures += 1
                    logger.debug("MCP server %r: GET stream ended: %s", self.name, exc)
                await asyncio.sleep(state.retry_seconds * (1 + failures))
        finally:
            opened.set()

    async def _dispatch(self, message: JsonDict, origin: Any = None) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._spawn(self._answer(message, self._call_of(origin)))
            else:
                self._server_notification(message)
            return
        request_id = message.get("id")
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is not None and not future.done():
            future.set_result(message)

    async def _answer(self, message: JsonDict, call: Any = None) -> None:
        reply = await self._server_request(message, call)
        try:
            async with asyncio.timeout(self.timeout_seconds):
                await self._post(reply, str(message.get("method")))
        except (MCPError, TimeoutError) as exc:
            logger.warning("MCP server %r: could not answer its request: %s", self.name, exc)

    def __repr__(self) -> str:
        return f"MCPHttpServer(name={self.name!r}, url={self.url!r})"


__all__ = ["MCPHttpServer"]
