"""The model-provider conformance suite and a scripted loopback HTTP server.

:class:`ScriptedHTTPServer` is a real HTTP server on ``127.0.0.1`` (random
port, stdlib only) that answers each request with the next
:class:`ScriptedResponse` and records what it received, so a test can assert
the auth header, the model and the tool schema a provider sent. Streaming
responses are written chunk by chunk and end by closing the connection, which
also lets a test cut a stream short.

A provider plugin subclasses :class:`ProviderConformance` (class name starting
with ``Test``), says how to build its provider against a base URL and how its
vendor spells a text answer, a tool call, their streamed forms and an error::

    from avo.testing.providers import ProviderConformance, ScriptedResponse

    class TestMyVendorConformance(ProviderConformance):
        vendor = "MyVendor"
        def make_provider(self, base_url, api_key): ...
        def text_response(self, text): return ScriptedResponse.json({...})
        ...

The suite checks: text and tool-call decisions, usage, finish reasons (stop,
tool_calls, and length when the subclass scripts a truncated answer), every
call of a several-calls turn (when scripted), stream assembles to
what ``generate`` returns, HTTP status -> ``ProviderError.retryable``,
connection failures retryable, malformed answers (invalid JSON, wrong content
type, a tool call without a name, a truncated stream) -> non-retryable
``ProviderError`` naming the vendor, and the API key never in an error.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from avo.exceptions import ProviderError
from avo.models import ModelRequest, ModelResponse, TokenUsage, ToolMetadata

# ----------------------------------------------------------------- the server


@dataclass
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float = field(default_factory=time.monotonic)
    """When the server read the request (``time.monotonic``)."""

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body.decode("utf-8"))

    def header(self, name: str) -> str | None:
        """A header value (case-insensitive)."""
        return self.headers.get(name.lower())


@dataclass
class ScriptedResponse:
    """What the server answers with.

    ``body`` is sent with a ``Content-Length``; ``chunks`` are streamed one
    write at a time and the connection is closed after the last (a stream cut
    short is just a list of chunks missing its end marker).
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Sequence[bytes] | None = None
    delay_seconds: float = 0.0

    @classmethod
    def json(
        cls, data: Any, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> ScriptedResponse:
        """A JSON body."""
        return cls(status=status, body=json.dumps(data).encode(), headers=dict(headers or {}))

    @classmethod
    def text(
        cls, text: str, *, status: int = 200, content_type: str = "text/plain"
    ) -> ScriptedResponse:
        """A raw text body (for malformed-response tests)."""
        return cls(status=status, body=text.encode(), content_type=content_type)

    @classmethod
    def sse(cls, events: Iterable[tuple[str | None, Any]]) -> ScriptedResponse:
        """A ``text/event-stream``; each event is ``(event name or None, data)``.

        ``data`` that is not a string is JSON-encoded.
        """
        chunks = []
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            prefix = f"event: {name}\n" if name else ""
            chunks.append(f"{prefix}data: {payload}\n\n".encode())
        return cls(content_type="text/event-stream", chunks=chunks)

    @classmethod
    def ndjson(cls, objects: Iterable[Any]) -> ScriptedResponse:
        """An ``application/x-ndjson`` stream, one JSON object per line."""
        chunks = [(json.dumps(obj) + "\n").encode() for obj in objects]
        return cls(content_type="application/x-ndjson", chunks=chunks)


ScriptItem = ScriptedResponse | Callable[[RecordedRequest], ScriptedResponse]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's
        # algorithm meets the client's delayed ACK and every response waits ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        recorded = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        owner = self.server.owner
        item = owner._next(recorded)
        response = item(recorded) if callable(item) else item
        if response.delay_seconds:
            time.sleep(response.delay_seconds)
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if response.chunks is None:
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)
            return
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in response.chunks:
            self.wfile.write(chunk)
            self.wfile.flush()

    do_POST = _handle
    do_GET = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedHTTPServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a cancelled race loser) is not a server failure.
        return


class ScriptedHTTPServer:
    """A loopback HTTP server answering from a script; use as a (async) context manager."""

    def __init__(self, script: Iterable[ScriptItem] = ()) -> None:
        self._script: list[ScriptItem] = list(script)
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def push(self, *items: ScriptItem) -> None:
        """Append responses to the script."""
        with self._lock:
            self._script.extend(items)

    def _next(self, request: RecordedRequest) -> ScriptItem:
        with self._lock:
            self.requests.append(request)
            if self._script:
                return self._script.pop(0)
        return ScriptedResponse.json(
            {"error": {"message": "scripted server has no response left"}}, status=599
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._server is None:
            raise RuntimeError("ScriptedHTTPServer is not started; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ScriptedHTTPServer:
        """Bind a random loopback port and serve in a daemon thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedHTTPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ScriptedHTTPServer:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.close()


def unused_loopback_url() -> str:
    """A ``http://127.0.0.1:<port>`` URL where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# ----------------------------------------------------------------- the suite

WEATHER_TOOL = ToolMetadata(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
SECRET_KEY = "sk-conformance-secret-0123456789abcdef"


def conformance_request(*, tools: bool = True) -> ModelRequest:
    """The request every suite test sends."""
    return ModelRequest(
        run_id="conformance",
        step=1,
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris?"},
        ],
        tools=[WEATHER_TOOL] if tools else [],
    )


class ProviderConformance:
    """Base class of a provider plugin's conformance tests (see the module docstring)."""

    vendor: ClassVar[str] = ""
    """The name every error message must contain."""
    supports_stream: ClassVar[bool] = True
    stable_tool_call_ids: ClassVar[bool] = True
    """False when the vendor sends no tool-call ids (the adapter invents them)."""
    retryable_statuses: ClassVar[tuple[int, ...]] = (429, 500, 502, 503)
    final_statuses: ClassVar[tuple[int, ...]] = (400, 401, 403, 404, 422)
    reports_finish_reason: ClassVar[bool] = True
    """False when the adapter cannot tell why the vendor stopped (finish_reason stays None)."""

    # -- what a subclass provides -------------------------------------
    def make_provider(self, base_url: str, api_key: str) -> Any:
        """The provider under test, talking to ``base_url`` with ``api_key``."""
        raise NotImplementedError

    def text_response(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """The vendor's non-streaming answer ``text``."""
        raise NotImplementedError

    def tool_call_response(
        self, call_id: str, name: str, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """The vendor's non-streaming tool call."""
        raise NotImplementedError

    def text_stream_response(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """The vendor's streamed answer ``text`` (complete, with its end marker)."""
        raise NotImplementedError

    def tool_call_stream_response(
        self, call_id: str, name: str, arguments: dict[str, Any], usage: TokenUsage
    ) -> ScriptedResponse:
        """The vendor's streamed tool call."""
        raise NotImplementedError

    def error_response(self, status: int, message: str) -> ScriptedResponse:
        """The vendor's error body for ``status``."""
        return ScriptedResponse.json({"error": {"message": message}}, status=status)

    def nameless_tool_call_response(self) -> ScriptedResponse:
        """A tool call whose name is missing."""
        raise NotImplementedError

    def tool_calls_response(
        self, calls: list[tuple[str, str, dict[str, Any]]], usage: TokenUsage
    ) -> ScriptedResponse:
        """Optional: several tool calls in one turn, ``(call id, name, arguments)`` each."""
        raise NotImplementedError

    def truncated_response(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        """Optional: an answer cut off at the output-token limit."""
        raise NotImplementedError

    def truncated_stream_response(self) -> ScriptedResponse:
        """A stream cut off before its end marker."""
        raise NotImplementedError

    # -- plumbing ------------------------------------------------------
    @pytest.fixture
    def server(self) -> Iterator[ScriptedHTTPServer]:
        """A fresh scripted loopback server per test."""
        with ScriptedHTTPServer() as server:
            yield server

    async def _call(self, server: ScriptedHTTPServer, *, stream: bool = False) -> ModelResponse:
        provider = self.make_provider(server.url, SECRET_KEY)
        try:
            if stream:
                from avo.providers.streaming import collect_stream

                return await collect_stream(provider, conformance_request())
            response: ModelResponse = await provider.generate(conformance_request())
            return response
        finally:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()

    async def _expect_error(
        self, server: ScriptedHTTPServer, *, stream: bool = False
    ) -> ProviderError:
        with pytest.raises(ProviderError) as info:
            await self._call(server, stream=stream)
        message = str(info.value)
        assert self.vendor in message, f"error does not name {self.vendor!r}: {message}"
        assert SECRET_KEY not in message
        return info.value

    # -- the tests -----------------------------------------------------
    async def test_generate_text(self, server: ScriptedHTTPServer) -> None:
        server.push(self.text_response("Sunny, 21C.", TokenUsage(input_tokens=12, output_tokens=5)))
        response = await self._call(server)
        assert response.content == "Sunny, 21C."
        assert response.tool_call is None
        assert response.usage == TokenUsage(input_tokens=12, output_tokens=5)
        assert len(server.requests) == 1

    async def test_generate_tool_call(self, server: ScriptedHTTPServer) -> None:
        usage = TokenUsage(input_tokens=20, output_tokens=7)
        server.push(self.tool_call_response("call_1", "get_weather", {"city": "Paris"}, usage))
        response = await self._call(server)
        assert response.tool_call is not None
        assert response.tool_call.name == "get_weather"
        assert response.tool_call.arguments == {"city": "Paris"}
        if self.stable_tool_call_ids:
            assert response.tool_call.tool_call_id == "call_1"
        assert response.usage == usage

    async def test_stream_equals_generate(self, server: ScriptedHTTPServer) -> None:
        if not self.supports_stream:
            pytest.skip("provider does not stream")
        usage = TokenUsage(input_tokens=9, output_tokens=4)
        for plain, streamed in (
            (
                self.text_response("Sunny, 21C.", usage),
                self.text_stream_response("Sunny, 21C.", usage),
            ),
            (
                self.tool_call_response("call_1", "get_weather", {"city": "Paris"}, usage),
                self.tool_call_stream_response("call_1", "get_weather", {"city": "Paris"}, usage),
            ),
        ):
            server.push(plain, streamed)
            generated = await self._call(server)
            assembled = await self._call(server, stream=True)
            assert assembled.content == generated.content
            assert assembled.usage == generated.usage
            if generated.tool_call is not None:
                assert assembled.tool_call is not None
                assert assembled.tool_call.name == generated.tool_call.name
                assert assembled.tool_call.arguments == generated.tool_call.arguments
                if self.stable_tool_call_ids:
                    assert assembled.tool_call.tool_call_id == generated.tool_call.tool_call_id

    async def test_finish_reasons(self, server: ScriptedHTTPServer) -> None:
        from avo.models import FinishReason

        if not self.reports_finish_reason:
            pytest.skip("the adapter reports no finish reason")
        usage = TokenUsage(input_tokens=3, output_tokens=2)
        server.push(
            self.text_response("Sunny.", usage),
            self.tool_call_response("call_1", "get_weather", {"city": "Paris"}, usage),
        )
        assert (await self._call(server)).finish_reason is FinishReason.STOP
        assert (await self._call(server)).finish_reason is FinishReason.TOOL_CALLS
        try:
            truncated = self.truncated_response("Sunny and", usage)
        except NotImplementedError:
            return
        server.push(truncated)
        response = await self._call(server)
        assert (response.content, response.finish_reason) == ("Sunny and", FinishReason.LENGTH)

    async def test_every_tool_call_of_a_turn(self, server: ScriptedHTTPServer) -> None:
        calls = [
            ("call_1", "get_weather", {"city": "Paris"}),
            ("call_2", "get_weather", {"city": "Oslo"}),
            ("call_3", "get_weather", {"city": "Lima"}),
        ]
        usage = TokenUsage(input_tokens=4, output_tokens=9)
        try:
            server.push(self.tool_calls_response(calls, usage))
        except NotImplementedError:
            pytest.skip("no several-calls response scripted for this vendor")
        response = await self._call(server)
        got = [(c.name, c.arguments) for c in response.tool_calls]
        assert got == [(name, arguments) for _, name, arguments in calls]
        if self.stable_tool_call_ids:
            assert [c.tool_call_id for c in response.tool_calls] == [c[0] for c in calls]

    async def test_http_errors_map_to_retryable(self, server: ScriptedHTTPServer) -> None:
        for status in (*self.retryable_statuses, *self.final_statuses):
            server.push(self.error_response(status, f"failure {status} for {SECRET_KEY}"))
            error = await self._expect_error(server)
            assert error.retryable is (status in self.retryable_statuses), status
            assert str(status) in str(error)
            assert error.status_code in (None, status)  # the runtime reports it when set

    async def test_stream_http_error(self, server: ScriptedHTTPServer) -> None:
        if not self.supports_stream:
            pytest.skip("provider does not stream")
        server.push(self.error_response(429, "slow down"))
        assert (await self._expect_error(server, stream=True)).retryable is True

    async def test_connection_refused_is_retryable(self) -> None:
        provider = self.make_provider(unused_loopback_url(), SECRET_KEY)
        try:
            with pytest.raises(ProviderError) as info:
                await provider.generate(conformance_request())
        finally:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
        assert info.value.retryable is True
        assert self.vendor in str(info.value)

    async def test_invalid_json(self, server: ScriptedHTTPServer) -> None:
        server.push(ScriptedResponse.text("{not json", content_type="application/json"))
        error = await self._expect_error(server)
        assert error.retryable is False
        assert "JSON" in str(error)

    async def test_unexpected_content_type(self, server: ScriptedHTTPServer) -> None:
        server.push(ScriptedResponse.text("<html>gateway</html>", content_type="text/html"))
        error = await self._expect_error(server)
        assert error.retryable is False
        assert "content type" in str(error)

    async def test_tool_call_without_name(self, server: ScriptedHTTPServer) -> None:
        server.push(self.nameless_tool_call_response())
        error = await self._expect_error(server)
        assert error.retryable is False
        assert "name" in str(error)

    async def test_truncated_stream(self, server: ScriptedHTTPServer) -> None:
        if not self.supports_stream:
            pytest.skip("provider does not stream")
        server.push(self.truncated_stream_response())
        error = await self._expect_error(server, stream=True)
        assert error.retryable is False


__all__ = [
    "SECRET_KEY",
    "WEATHER_TOOL",
    "ProviderConformance",
    "RecordedRequest",
    "ScriptItem",
    "ScriptedHTTPServer",
    "ScriptedResponse",
    "conformance_request",
    "unused_loopback_url",
]
