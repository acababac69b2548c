"""OAuth for remote MCP servers: login, stored tokens, refresh, the non-interactive error.

A real HTTP server on loopback plays the MCP server and its authorization
server (protected-resource metadata, RFC 8414 metadata, dynamic registration,
an authorize endpoint that redirects straight back, a token endpoint); the
"browser" is an HTTP client following that redirect to avo's loopback listener.
The conformance suite's auth scenarios cover the discovery variants.
"""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from avo_mcp import MCPClient, servers_from_config
from avo_mcp.config import oauth_client
from avo_mcp.oauth import MCPAuthError, parse_challenge, pkce_pair


class _Service(BaseHTTPRequestHandler):
    valid_tokens: set[str]
    issued: list[str]
    grants: list[str]

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, body: object, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    @property
    def origin(self) -> str:
        return f"http://{self.headers['Host']}"

    def do_GET(self) -> None:
        path = urlsplit(self.path)
        if path.path == "/.well-known/oauth-protected-resource/mcp":
            self._json(
                200, {"resource": f"{self.origin}/mcp", "authorization_servers": [self.origin]}
            )
        elif path.path == "/.well-known/oauth-authorization-server":
            self._json(
                200,
                {
                    "issuer": self.origin,
                    "authorization_endpoint": f"{self.origin}/authorize",
                    "token_endpoint": f"{self.origin}/token",
                    "registration_endpoint": f"{self.origin}/register",
                    "code_challenge_methods_supported": ["S256"],
                },
            )
        elif path.path == "/authorize":
            query = parse_qs(path.query)
            target = (
                query["redirect_uri"][0]
                + "?"
                + urlencode({"code": "the-code", "state": query["state"][0]})
            )
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.path == "/mcp":
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._json(404, {})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        path = urlsplit(self.path).path
        if path == "/register":
            self._json(201, {"client_id": "avo-client"})
        elif path == "/token":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            self.grants.append(form["grant_type"])
            token = f"at-{len(self.issued) + 1}"
            self.issued.append(token)
            self.valid_tokens.add(token)
            self._json(200, {"access_token": token, "refresh_token": "rt", "expires_in": 3600})
        elif path == "/mcp":
            auth = self.headers.get("Authorization", "")
            if auth.removeprefix("Bearer ") not in self.valid_tokens:
                meta = f"{self.origin}/.well-known/oauth-protected-resource/mcp"
                self._json(401, {}, {"WWW-Authenticate": f'Bearer resource_metadata="{meta}"'})
                return
            message = json.loads(body)
            if "id" not in message:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            result: dict = {"tools": []}
            if message["method"] == "initialize":
                result = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "guarded", "version": "1"},
                }
            self._json(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


@pytest.fixture
def service() -> Iterator[tuple[str, type[_Service]]]:
    handler = type("Handler", (_Service,), {"valid_tokens": set(), "issued": [], "grants": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", handler
    finally:
        server.shutdown()
        server.server_close()


async def _browser(url: str) -> None:
    async with httpx.AsyncClient(follow_redirects=True, trust_env=False) as http:
        assert (await http.get(url)).status_code == 200  # avo's loopback listener answered


async def test_login_store_reuse_and_refresh(service, tmp_path: Path) -> None:
    url, handler = service
    home = tmp_path / "home"
    (home / ".avo").mkdir(parents=True)
    (home / ".avo" / "mcp.json").write_text(json.dumps({"guarded": {"url": url}}))
    environ = {"HOME": str(home)}

    # Without a login, the connection stops with the way forward.
    (server,) = servers_from_config(environ=environ)
    with pytest.raises(MCPAuthError, match="run `avo mcp login guarded`"):
        await server.start()

    # What `avo mcp login guarded` does, with an HTTP client as the browser.
    auth = oauth_client("guarded", {"url": url}, environ, interactive=True, open_browser=_browser)
    async with httpx.AsyncClient(trust_env=False) as http:
        assert await auth.authorize(http) == "at-1"
    tokens = home / ".avo" / "mcp-oauth.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    record = json.loads(tokens.read_text())[url]
    assert record["client_id"] == "avo-client" and record["refresh_token"] == "rt"

    # A later connection sends the stored token without asking anyone.
    (server,) = servers_from_config(environ=environ)
    async with MCPClient(server):
        assert server.server_info["name"] == "guarded"
    assert handler.grants == ["authorization_code"]

    # The server stops accepting it: a 401 makes avo refresh, store, and retry.
    handler.valid_tokens.clear()
    (server,) = servers_from_config(environ=environ)
    async with MCPClient(server):
        assert server.server_info["name"] == "guarded"
    assert handler.grants == ["authorization_code", "refresh_token"]
    assert json.loads(tokens.read_text())[url]["access_token"] == "at-2"

    assert auth.forget() and url not in json.loads(tokens.read_text())


async def test_a_header_token_bypasses_oauth(service, tmp_path: Path) -> None:
    url, handler = service
    handler.valid_tokens.add("static-token")
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"g": {"url": url, "headers": {"Authorization": "Bearer ${TOKEN}"}}})
    )
    (server,) = servers_from_config(config, environ={"TOKEN": "static-token", "HOME": "/nope"})
    assert server.auth is None
    async with MCPClient(server):
        assert server.server_info["name"] == "guarded"
    assert handler.grants == []


def test_pkce_and_challenge_parsing() -> None:
    import base64
    import hashlib

    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    assert challenge == digest.decode()
    assert parse_challenge(
        'Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/y"'
    ) == {"error": "insufficient_scope", "scope": "a b", "resource_metadata": "https://x/y"}
