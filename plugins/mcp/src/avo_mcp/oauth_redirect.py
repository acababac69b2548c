"""The loopback end of an OAuth authorization: the browser is sent to the
authorization server and comes back to a one-shot HTTP listener on this
machine, which hands the redirect's parameters (code, state or error) to the
waiting client (RFC 8252's loopback redirect)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from urllib.parse import parse_qs, urlsplit


def system_browser(url: str) -> None:
    """Say where to authorize on stderr and open it in the system's browser (best effort)."""
    import webbrowser

    print(f"avo: authorize avo with the MCP server in your browser:\n  {url}", file=sys.stderr)
    with contextlib.suppress(Exception):
        webbrowser.open(url)


class LoopbackRedirect:
    """A one-shot HTTP listener on loopback that receives the authorization redirect."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.uri = ""
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[dict[str, str]] | None = None

    async def __aenter__(self) -> LoopbackRedirect:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, self.host, 0)
        port = self._server.sockets[0].getsockname()[1]
        self.uri = f"http://{self.host}:{port}/callback"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def wait(self, seconds: float) -> dict[str, str]:
        """The redirect's query parameters; TimeoutError when none came within ``seconds``."""
        assert self._result is not None
        async with asyncio.timeout(seconds):
            return await self._result

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await reader.readline()).decode("latin-1").split()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            target = urlsplit(line[1]) if len(line) == 3 else None
            if target is None or target.path != "/callback":
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            params = {key: values[0] for key, values in parse_qs(target.query).items()}
            body = b"<p>avo received the authorization. You can close this tab.</p>"
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            if self._result is not None and not self._result.done():
                self._result.set_result(params)
        finally:
            with contextlib.suppress(Exception):
                await writer.drain()
                writer.close()


__all__ = ["LoopbackRedirect", "system_browser"]
