"""A provider used under one event loop after another (``asyncio.run`` twice).

Real APIs keep connections alive, so the loopback server here does too
(HTTP/1.1 with a content length): the first run leaves a pooled connection
that belongs to its loop, which is closed by the time the second run starts.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from avo.runtime import AgentRuntime
from avo.state import RunState
from avo_providers.base_http import ProviderConfig
from avo_providers.openai_compatible import OpenAICompatibleProvider

ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


class _KeepAlive(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        body = json.dumps(ANSWER).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def keep_alive_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    server.daemon_threads = True
    serve = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    serve.daemon = True
    serve.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_provider_runs_again_under_a_new_event_loop(keep_alive_url: str) -> None:
    url = keep_alive_url
    provider = OpenAICompatibleProvider(ProviderConfig(model="m", api_key="k", base_url=url))
    runtime = AgentRuntime(provider=provider)
    results = [asyncio.run(runtime.run(f"say hello {n}")) for n in range(3)]
    assert [(r.status, r.output, r.error) for r in results] == [
        (RunState.COMPLETED, "hello", None)
    ] * 3


def test_aclose_under_another_loop_drops_the_old_client(keep_alive_url: str) -> None:
    url = keep_alive_url
    provider = OpenAICompatibleProvider(ProviderConfig(model="m", api_key="k", base_url=url))
    runtime = AgentRuntime(provider=provider)
    assert asyncio.run(runtime.run("hi")).status is RunState.COMPLETED
    asyncio.run(provider.aclose())  # the first loop is closed: nothing to await there
    assert asyncio.run(runtime.run("hi again")).status is RunState.COMPLETED
    asyncio.run(provider.aclose())
