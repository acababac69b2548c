"""Shared pieces: a real HTTP hook server on 127.0.0.1 (port 0), hook scripts, a tool."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo.models import ToolRisk
from avo.tools import FunctionTool


class ShoutArgs(BaseModel):
    text: str


def shout_tool(calls: list[str]) -> FunctionTool[ShoutArgs]:
    """A tool that records each text it is called with."""

    def shout(args: ShoutArgs) -> str:
        calls.append(args.text)
        return args.text.upper()

    return FunctionTool(
        name="shout",
        description="Shouts.",
        arguments_model=ShoutArgs,
        function=shout,
        risk=ToolRisk.INSPECT,
        argument_kinds={"text": "text"},
    )


class HookServer:
    """A hook endpoint: records every request; answers with ``reply`` after ``delay``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply: tuple[int, str] = (200, "")
        self.delay = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                server.requests.append(
                    {"headers": dict(self.headers), "body": json.loads(body), "path": self.path}
                )
                if server.delay:
                    time.sleep(server.delay)
                status, text = server.reply
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hook_server() -> Iterator[HookServer]:
    server = HookServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def script(tmp_path: Path) -> Any:
    """Write an executable shell script; returns its path."""

    def write(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
        return str(path)

    return write
