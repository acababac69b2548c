"""Safe by default: a token for non-loopback binds, no cross-origin or forged changes.

Real ``avo ui`` processes, spoken to over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import http.client
import re
from urllib.parse import urlsplit

import pytest
from ui_kit import Server, Workspace

from avo.exceptions import ConfigError
from avo_ui.security import Guard, is_loopback


def _request(
    url: str, path: str, method: str = "GET", headers: dict[str, str] | None = None, body: str = ""
) -> tuple[int, dict[str, str], str]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
    try:
        sent = dict(headers or {})
        if body:
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        conn.request(method, path, body=body or None, headers=sent)
        response = conn.getresponse()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read().decode(),
        )
    finally:
        conn.close()


def _paused_run(workspace: Workspace) -> str:
    workspace.avo("run", "capitalise beta")
    (run,) = workspace.runs()
    assert run["state"] == "paused"
    return str(run["run_id"])


def test_a_non_loopback_bind_needs_its_token(workspace: Workspace) -> None:
    server = Server(workspace, "--host", "0.0.0.0")
    try:
        assert "?token=" in server.link
        token = server.link.split("?token=")[1]
        status, _, body = _request(server.url, "/")
        assert status == 401 and "token" in body
        assert _request(server.url, "/?token=wrong-token-of-some-length")[0] == 401
        assert _request(server.url, "/", headers={"Authorization": "Bearer nope"})[0] == 401
        # the printed link sets a cookie and drops the token from the address
        status, headers, _ = _request(server.url, f"/?token={token}")
        assert status == 303 and headers["location"] == "/"
        cookie = headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        pair = cookie.split(";")[0]
        assert _request(server.url, "/", headers={"Cookie": pair})[0] == 200
        assert (
            _request(server.url, "/plugins", headers={"Authorization": f"Bearer {token}"})[0] == 200
        )
    finally:
        server.close()


def test_cross_origin_and_forged_posts_change_nothing(workspace: Workspace) -> None:
    run_id = _paused_run(workspace)
    server = Server(workspace)
    try:
        status, _, page = _request(server.url, f"/runs/{run_id}")
        assert status == 200
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        own = server.url
        form = f"csrf={csrf}"
        # another site's page posting to the UI: refused before anything runs
        status, _, body = _request(
            own, f"/runs/{run_id}/cancel", "POST", {"Origin": "http://evil.example"}, form
        )
        assert status == 403 and "cross-origin" in body
        # no Origin nor Referer at all: refused too
        assert _request(own, f"/runs/{run_id}/cancel", "POST", {}, form)[0] == 403
        # same origin but without this server's CSRF token: refused
        status, _, body = _request(
            own, f"/runs/{run_id}/approve", "POST", {"Origin": own}, "csrf=forged"
        )
        assert status == 403 and "CSRF" in body
        assert workspace.runs()[0]["state"] == "paused"  # nothing happened
        # a page served for another host name (DNS rebinding) is refused
        status, _, _ = _request(own, "/", headers={"Host": f"evil.example:{urlsplit(own).port}"})
        assert status == 403
        # the real form works: approve with a reason, as the CLI would record it
        status, headers, _ = _request(
            own, f"/runs/{run_id}/deny", "POST", {"Origin": own}, form + "&reason=not+today"
        )
        assert status == 303 and headers["location"] == f"/runs/{run_id}"
        inspect = workspace.avo("runs", "list", "--pending", "--json")
        assert run_id not in inspect.stdout
    finally:
        server.close()


def test_guard_rules() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.1")
    guard, generated = Guard.for_bind("127.0.0.1", None)
    assert guard.token is None and not generated
    guard, generated = Guard.for_bind("0.0.0.0", None)
    assert generated and guard.token and len(guard.token) >= 16
    with pytest.raises(ConfigError, match="at least 16"):
        Guard.for_bind("0.0.0.0", "short")


def test_bad_input_gets_a_clear_answer(workspace: Workspace) -> None:
    server = Server(workspace)
    try:
        status, _, body = _request(server.url, "/runs/no-such-run")
        assert status == 404 and "no-such-run is not in this store" in body
        status, _, body = _request(server.url, "/?state=sleeping")
        assert status == 400 and "sleeping" in body
        status, _, body = _request(server.url, "/?cursor=garbage")
        assert status == 400 and "cursor" in body
        status, _, body = _request(server.url, "/?from=yesterday")
        assert status == 400 and "use YYYY-MM-DD" in body
        status, _, body = _request(server.url, "/?min_cost=-1")
        assert status == 400 and "is not an amount" in body
        done = workspace.avo("ui", "--workspace", "/no/such/dir", check=False)
        assert done.returncode == 2 and "--workspace /no/such/dir" in done.stderr
    finally:
        server.close()
