"""OAuth 2.1 for remote MCP servers: authorization code + PKCE, loopback redirect, refresh.

What the MCP authorization spec asks of a client, in order:

1. A ``401`` names the server's *protected resource metadata* in its
   ``WWW-Authenticate`` header (else it is found at
   ``/.well-known/oauth-protected-resource[/path]``); its ``resource`` must be
   this server, its ``authorization_servers`` say whom to ask.
2. The authorization server's metadata (RFC 8414, or OpenID discovery),
   tried at the well-known locations for an issuer with or without a path;
   a server of the 2025-03-26 revision without any falls back to
   ``/authorize``, ``/token`` and ``/register`` on the MCP server's origin.
3. A client id: a pre-registered one, a client-metadata-document URL when the
   server supports those, else dynamic registration (RFC 7591).
4. The user authorizes in a browser; the code comes back to a one-shot HTTP
   listener on ``127.0.0.1`` (the loopback redirect), checked against the
   ``state`` sent; PKCE (S256) binds it to this client; the ``resource``
   parameter (RFC 8707) names the server.
5. Tokens are stored like avo's other MCP credentials (``~/.avo/
   mcp-oauth.json``, mode 0600) and refreshed when they expire or a request
   comes back ``401``; a ``403 insufficient_scope`` asks again for the union
   of scopes, at most twice in a row.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import inspect
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from avo_mcp.oauth_redirect import LoopbackRedirect, system_browser
from avo_mcp.oauth_tokens import MCPAuthError, TokenStore, default_token_path

OpenBrowser = Callable[[str], Any | Awaitable[Any]]

_AUTH_PARAM = re.compile(r'(\w+)="?([^",]*)"?')
_EXPIRY_MARGIN_SECONDS = 30
_MAX_STEP_UPS = 2


@dataclass
class OAuthConfig:
    """How avo authorizes with one remote MCP server (every field optional).

    ``client_id``/``client_secret``: a client registered with the service by
    hand. ``client_metadata_url``: a URL serving avo's client metadata
    document, used as the client id where the server accepts those. ``scope``:
    instead of what the server asks for. ``open_browser``: shows the user the
    authorization URL (default: the system browser, and the URL on stderr).
    ``interactive=False`` never opens a browser: without a usable stored or
    refreshable token it fails, telling the user to run ``avo mcp login``.
    """

    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    scope: str | None = None
    client_name: str = "avo"
    open_browser: OpenBrowser | None = None
    interactive: bool = True
    redirect_host: str = "127.0.0.1"
    timeout_seconds: float = 300.0
    login_hint: str = "avo mcp login NAME"
    grant: str | None = None
    """``"client_credentials"`` for a machine client (id + secret, no browser);
    by default chosen when the server supports only that grant."""


def parse_challenge(header: str) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer ...`` header."""
    return {key.lower(): value for key, value in _AUTH_PARAM.findall(header or "")}


def pkce_pair() -> tuple[str, str]:
    """A PKCE ``(code_verifier, S256 code_challenge)``."""
    verifier = secrets.token_urlsafe(64)[:96]
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def resource_uri(url: str) -> str:
    """The canonical resource URI of an MCP endpoint (no query, no fragment)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))


def _resource_allows(declared: str, requested: str) -> bool:
    want, have = urlsplit(requested), urlsplit(declared)
    if (want.scheme, want.netloc.lower()) != (have.scheme, have.netloc.lower()):
        return False
    prefix = have.path.rstrip("/") + "/"
    return (want.path.rstrip("/") + "/").startswith(prefix)


class OAuthClient:
    """Access tokens for one MCP server; see the module docstring for the flow."""

    def __init__(
        self,
        server_url: str,
        *,
        config: OAuthConfig | None = None,
        store: TokenStore | None = None,
    ) -> None:
        self.server_url = server_url
        self.resource = resource_uri(server_url)
        self.config = config or OAuthConfig()
        self.store = store or TokenStore(None)
        self._step_ups = 0
        self._lock = asyncio.Lock()

    # -------------------------------------------------------------- tokens

    @property
    def record(self) -> dict[str, Any]:
        """What is stored for this server (tokens, client registration, endpoints)."""
        return self.store.get(self.resource)

    async def access_token(self, http: Any) -> str | None:
        """A current access token (refreshed first when it has expired), or None."""
        record = self.record
        token = record.get("access_token")
        expires_at = record.get("expires_at")
        if token and isinstance(expires_at, int | float) and time.time() > expires_at:
            with contextlib.suppress(MCPAuthError):
                return await self._refresh(http, record)
            return None
        return token if isinstance(token, str) else None

    async def unauthorized(self, http: Any, challenge: str) -> str:
        """Handle a ``401``: refresh if possible, else authorize; return the new token."""
        async with self._lock:
            record = self.record
            if record.get("refresh_token") and record.get("token_endpoint"):
                with contextlib.suppress(MCPAuthError):
                    return await self._refresh(http, record)
            return await self.authorize(http, parse_challenge(challenge))

    async def forbidden(self, http: Any, challenge: str) -> str | None:
        """Handle a ``403``: step up the scope for ``insufficient_scope`` (bounded)."""
        params = parse_challenge(challenge)
        if params.get("error") != "insufficient_scope" or self._step_ups >= _MAX_STEP_UPS:
            return None
        self._step_ups += 1
        async with self._lock:
            held = set(str(self.record.get("scope") or "").split())
            params["scope"] = " ".join(sorted(held | set(params.get("scope", "").split())))
            return await self.authorize(http, params)

    def succeeded(self) -> None:
        """A request went through: step-ups may start over."""
        self._step_ups = 0

    def forget(self) -> bool:
        """Drop the stored tokens and registration for this server."""
        return self.store.delete(self.resource)

    # ------------------------------------------------------------- the flow

    async def authorize(self, http: Any, challenge: Mapping[str, str] | None = None) -> str:
        """Run the whole authorization-code flow; store and return the access token."""
        challenge = dict(challenge or {})
        if not self.config.interactive and self.config.grant != "client_credentials":
            raise MCPAuthError(
                f"MCP server at {self.server_url} needs authorization; run "
                f"`{self.config.login_hint}` (it opens a browser) and try again"
            )
        prm = await self._protected_resource(http, challenge.get("resource_metadata"))
        resource = self.resource
        if prm is not None:
            declared = prm.get("resource")
            if isinstance(declared, str) and declared:
                if not _resource_allows(declared, self.server_url):
                    raise MCPAuthError(
                        f"MCP server at {self.server_url} publishes metadata for another "
                        f"resource ({declared}); refusing to authorize for it"
                    )
                resource = declared
        issuers = prm.get("authorization_servers") if prm else None
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.server_url))
        issuer = issuers[0] if isinstance(issuers, list) and issuers else origin
        metadata = await self._server_metadata(http, issuer)
        if metadata is None:
            metadata = {
                "authorization_endpoint": f"{issuer.rstrip('/')}/authorize",
                "token_endpoint": f"{issuer.rstrip('/')}/token",
                "registration_endpoint": f"{issuer.rstrip('/')}/register",
                "code_challenge_methods_supported": ["S256"],
            }
        methods = metadata.get("code_challenge_methods_supported")
        if not isinstance(methods, list) or "S256" not in methods:
            raise MCPAuthError(
                f"the authorization server of {self.server_url} does not declare PKCE (S256) "
                "support; MCP clients must not authorize without it"
            )
        scope = self.config.scope or challenge.get("scope")
        if not scope and prm is not None and isinstance(prm.get("scopes_supported"), list):
            scope = " ".join(str(s) for s in prm["scopes_supported"])
        grants = metadata.get("grant_types_supported")
        if self.config.grant == "client_credentials" or (
            isinstance(grants, list)
            and "client_credentials" in grants
            and "authorization_code" not in grants
        ):
            return await self._client_credentials(http, metadata, resource, scope)
        async with LoopbackRedirect(self.config.redirect_host) as redirect:
            client = await self._client(http, metadata, redirect.uri)
            verifier, code_challenge = pkce_pair()
            state = secrets.token_urlsafe(24)
            query = {
                "response_type": "code",
                "client_id": client["client_id"],
                "redirect_uri": redirect.uri,
                "code_challenge": code_challenge,
                "code_challenge_method": "S256",
                "state": state,
                "resource": resource,
            }
            if scope:
                query["scope"] = scope
            endpoint = str(metadata["authorization_endpoint"])
            joiner = "&" if "?" in endpoint else "?"
            await self._open(f"{endpoint}{joiner}{urlencode(query, quote_via=quote)}")
            try:
                params = await redirect.wait(self.config.timeout_seconds)
            except TimeoutError:
                raise MCPAuthError(
                    f"no authorization arrived within {self.config.timeout_seconds:g} seconds; "
                    "try again"
                ) from None
        if params.get("state") != state:
            raise MCPAuthError("the authorization redirect carried the wrong state; try again")
        if "error" in params:
            detail = params.get("error_description", "")
            raise MCPAuthError(f"authorization was refused: {params['error']} {detail}".rstrip())
        if not params.get("code"):
            raise MCPAuthError("the authorization redirect carried no code")
        form = {
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": redirect.uri,
            "code_verifier": verifier,
            "resource": resource,
        }
        record = {
            **client,
            "token_endpoint": metadata["token_endpoint"],
            "resource": resource,
        }
        return await self._token(http, record, form)

    async def _client_credentials(
        self, http: Any, metadata: Mapping[str, Any], resource: str, scope: str | None
    ) -> str:
        if not (self.config.client_id and self.config.client_secret):
            raise MCPAuthError(
                f"the authorization server of {self.server_url} only grants client "
                "credentials: pass the client_id and client_secret registered with it "
                "(private_key_jwt client authentication is not supported)"
            )
        client = await self._client(http, metadata, "")
        form = {"grant_type": "client_credentials", "resource": resource}
        if scope:
            form["scope"] = scope
        record = {**client, "token_endpoint": metadata["token_endpoint"], "resource": resource}
        return await self._token(http, record, form)

    async def _refresh(self, http: Any, record: dict[str, Any]) -> str:
        form = {
            "grant_type": "refresh_token",
            "refresh_token": record["refresh_token"],
            "resource": record.get("resource") or self.resource,
        }
        return await self._token(http, record, form)

    async def _token(self, http: Any, record: dict[str, Any], form: dict[str, str]) -> str:
        headers = {"Accept": "application/json"}
        method = record.get("token_endpoint_auth_method", "none")
        form = {**form, "client_id": record["client_id"]}
        secret = record.get("client_secret")
        if secret and method == "client_secret_basic":
            pair = f"{quote(record['client_id'], safe='')}:{quote(secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif secret and method == "client_secret_post":
            form["client_secret"] = secret
        response = await http.post(str(record["token_endpoint"]), data=form, headers=headers)
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if response.status_code >= 400 or not isinstance(answer.get("access_token"), str):
            raise MCPAuthError(
                f"the token endpoint of {self.server_url} refused the {form['grant_type']} "
                f"grant (HTTP {response.status_code}): {answer.get('error', '')} "
                f"{answer.get('error_description', '')}".rstrip()
            )
        record = {**record, "access_token": answer["access_token"]}
        if isinstance(answer.get("refresh_token"), str):
            record["refresh_token"] = answer["refresh_token"]
        if isinstance(answer.get("expires_in"), int | float):
            record["expires_at"] = int(time.time() + answer["expires_in"] - _EXPIRY_MARGIN_SECONDS)
        else:
            record.pop("expires_at", None)
        if isinstance(answer.get("scope"), str):
            record["scope"] = answer["scope"]
        elif form.get("scope"):
            record["scope"] = form["scope"]
        self.store.put(self.resource, record)
        return str(answer["access_token"])

    # ------------------------------------------------------------ discovery

    async def _get_json(self, http: Any, url: str) -> dict[str, Any] | None:
        try:
            response = await http.get(url, headers={"Accept": "application/json"})
        except Exception as exc:  # any transport failure
            raise MCPAuthError(f"cannot fetch OAuth metadata {url}: {exc}") from exc
        if response.status_code != 200:
            return None
        try:
            data = response.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    async def _protected_resource(self, http: Any, hinted: str | None) -> dict[str, Any] | None:
        parts = urlsplit(self.server_url)
        origin = f"{parts.scheme}://{parts.netloc}"
        candidates = [hinted] if hinted else []
        path = parts.path.rstrip("/")
        if path:
            candidates.append(f"{origin}/.well-known/oauth-protected-resource{path}")
        candidates.append(f"{origin}/.well-known/oauth-protected-resource")
        for url in candidates:
            found = await self._get_json(http, url)
            if found is not None:
                return found
        return None

    async def _server_metadata(self, http: Any, issuer: str) -> dict[str, Any] | None:
        parts = urlsplit(issuer)
        origin = f"{parts.scheme}://{parts.netloc}"
        path = parts.path.rstrip("/")
        if path:
            candidates = [
                f"{origin}/.well-known/oauth-authorization-server{path}",
                f"{origin}/.well-known/openid-configuration{path}",
                f"{origin}{path}/.well-known/openid-configuration",
            ]
        else:
            candidates = [
                f"{origin}/.well-known/oauth-authorization-server",
                f"{origin}/.well-known/openid-configuration",
            ]
        for url in candidates:
            found = await self._get_json(http, url)
            if found is not None and found.get("authorization_endpoint"):
                return found
        return None

    async def _client(
        self, http: Any, metadata: Mapping[str, Any], redirect_uri: str
    ) -> dict[str, Any]:
        """The client id (and secret, and how to use it): configured, stored or registered."""
        supported = metadata.get("token_endpoint_auth_methods_supported")
        supported = supported if isinstance(supported, list) else []
        config = self.config
        if config.client_id:
            method = "none"
            if config.client_secret:
                method = (
                    "client_secret_post"
                    if "client_secret_post" in supported and "client_secret_basic" not in supported
                    else "client_secret_basic"
                )
            return {
                "client_id": config.client_id,
                "client_secret": config.client_secret,
                "token_endpoint_auth_method": method,
            }
        if config.client_metadata_url and metadata.get("client_id_metadata_document_supported"):
            return {"client_id": config.client_metadata_url, "token_endpoint_auth_method": "none"}
        stored = self.record
        if stored.get("client_id") and stored.get("registered"):
            # A loopback redirect may use any port (RFC 8252), so a registration is reused.
            keys = ("client_id", "client_secret", "token_endpoint_auth_method", "registered")
            return {key: stored[key] for key in keys if key in stored}
        endpoint = metadata.get("registration_endpoint")
        if not endpoint:
            raise MCPAuthError(
                f"the authorization server of {self.server_url} offers no client registration; "
                "register a client with the service and pass its client_id"
            )
        preferred = "none"
        if supported and "none" not in supported:
            preferred = supported[0]
        body = {
            "client_name": config.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": preferred,
        }
        response = await http.post(str(endpoint), json=body)
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if response.status_code >= 400 or not isinstance(answer.get("client_id"), str):
            raise MCPAuthError(
                f"client registration with {endpoint} failed (HTTP {response.status_code})"
            )
        secret = answer.get("client_secret")
        method = answer.get("token_endpoint_auth_method")
        if not isinstance(method, str):
            if not secret:
                method = "none"
            elif "client_secret_basic" in supported or not supported:
                method = "client_secret_basic"
            else:
                method = "client_secret_post"
        return {
            "client_id": answer["client_id"],
            "client_secret": secret if isinstance(secret, str) else None,
            "token_endpoint_auth_method": method,
            "registered": True,
        }

    async def _open(self, url: str) -> None:
        opener = self.config.open_browser or system_browser
        result = opener(url)
        if inspect.isawaitable(result):
            await result


__all__ = [
    "MCPAuthError",
    "OAuthClient",
    "OAuthConfig",
    "TokenStore",
    "default_token_path",
    "parse_challenge",
    "pkce_pair",
    "resource_uri",
]
