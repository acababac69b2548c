"""A real HTTP server on 127.0.0.1 with a scripted sequence of responses."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class WebhookServer:
    def __init__(self) -> None:
        self.statuses: list[int] = []  # consumed per request; 200 when empty
        self.hang = threading.Event()  # while set, requests hang until release
        self.release = threading.Event()
        self.requests: list[dict] = []
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                server.paths.append(self.path)
                if server.hang.is_set():
                    server.release.wait(5)
                status = server.statuses.pop(0) if server.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/services/T000/B000/s3cr3tpathvalue"


@pytest.fixture
def webhook_server() -> Iterator[WebhookServer]:
    server = WebhookServer()
    server.thread.start()
    yield server
    server.release.set()
    server.httpd.shutdown()
    server.httpd.server_close()
