"""Who may use the UI, and which requests may change anything.

- **Bind**: 127.0.0.1 by default. Any other address needs a token: the one
  configured (``--token`` / ``AVO_UI_TOKEN``) or one generated at start and
  printed once. With a token every request must carry it: the ``?token=``
  of the printed link (then kept in an HttpOnly, SameSite=Strict cookie), or an
  ``Authorization: Bearer`` header. Without one the answer is 401.
- **Host**: on a loopback bind, a request whose Host is not a loopback name
  is refused (a DNS-rebinding page cannot reach the UI through its own name).
- **Mutations** (every method but GET/HEAD): the ``Origin`` (else the
  ``Referer``) must be this server's own origin, and the form field ``csrf``
  (or the ``X-CSRF-Token`` header) must hold this server's CSRF token, which
  only its own pages carry. A cross-origin POST gets 403 and changes nothing.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from avo.exceptions import ConfigError

TOKEN_COOKIE = "avo_ui_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only reaches this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass
class Guard:
    """The server's access rules: its token (None on loopback) and CSRF secret."""

    bind_host: str = "127.0.0.1"
    token: str | None = None
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @classmethod
    def for_bind(cls, host: str, token: str | None) -> tuple[Guard, bool]:
        """The guard for a server bound to ``host``; True when its token was generated."""
        if token is not None and len(token) < 16:
            raise ConfigError(
                f"the UI token {token[:3]}... is {len(token)} characters; "
                "use at least 16 (or leave it out to get a generated one)",
                key="ui.token",
            )
        if token is None and not is_loopback(host):
            return cls(bind_host=host, token=secrets.token_urlsafe(24)), True
        return cls(bind_host=host, token=token), False

    def authorised(self, request: Request) -> bool:
        if self.token is None:
            return True
        offered = [
            request.cookies.get(TOKEN_COOKIE),
            request.query_params.get("token"),
        ]
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            offered.append(header[7:].strip())
        return any(
            candidate and hmac.compare_digest(candidate.encode(), self.token.encode())
            for candidate in offered
        )

    def host_allowed(self, request: Request) -> bool:
        if not is_loopback(self.bind_host):
            return True  # the token decides
        host = request.headers.get("host", "")
        name = urlsplit(f"//{host}").hostname or ""
        return is_loopback(name)

    def same_origin(self, request: Request) -> bool:
        source = request.headers.get("origin") or request.headers.get("referer")
        if not source or source == "null":
            return False
        parts = urlsplit(source)
        own = request.url
        return (parts.scheme, parts.netloc) == (own.scheme, own.netloc)

    def csrf_ok(self, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(
            str(offered).encode(), self.csrf_token.encode()
        )


class GuardMiddleware:
    """Applies a :class:`Guard` to every HTTP request before any route runs."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        response = self._refusal(request)
        if response is not None:
            await response(scope, receive, send)
            return
        if self.guard.token is not None and request.query_params.get("token"):
            # keep the token in a cookie and drop it from the address bar
            url = URL(scope=scope).remove_query_params("token")
            redirect = RedirectResponse(str(url.path) + (f"?{url.query}" if url.query else ""), 303)
            redirect.set_cookie(
                TOKEN_COOKIE, self.guard.token, httponly=True, samesite="strict", path="/"
            )
            await redirect(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, request: Request) -> Response | None:
        guard = self.guard
        if not guard.host_allowed(request):
            host = request.headers.get("host", "")
            return PlainTextResponse(
                f"host {host!r} is not this machine; open the UI at http://127.0.0.1", 403
            )
        if not guard.authorised(request):
            return PlainTextResponse(
                "this avo ui needs its token: open the link `avo ui` printed "
                "(…/?token=…) or send Authorization: Bearer <token>",
                401,
            )
        if request.method not in SAFE_METHODS and not guard.same_origin(request):
            origin = request.headers.get("origin") or request.headers.get("referer") or "none"
            return PlainTextResponse(
                f"cross-origin request refused (origin {origin}); "
                "use the UI's own pages to change runs",
                403,
            )
        return None


__all__ = ["TOKEN_COOKIE", "Guard", "GuardMiddleware", "is_loopback"]
