"""``~/.avo/mcp.json``: the MCP servers avo starts.

The file is a JSON object ``{name: {"command": [...], "env": {...}}}`` or
``{name: {"url": "https://.../mcp", "headers": {...}}}`` — the shape of Claude
Code's ``.mcp.json`` server entries. ``${VAR}`` references in
the command and env values are expanded from an injectable ``environ`` when a
server is started, never when it is saved.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from avo.exceptions import AvoError
from avo_mcp.client import MCPServer
from avo_mcp.features import ClientFeatures
from avo_mcp.session import MCPSession

NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASS", "AUTH", "CREDENTIAL")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")

ServerEntry = dict[str, Any]
OAUTH_KEYS = ("client_id", "client_secret", "scope", "client_metadata_url")


class McpCliError(AvoError):
    """A bad ``avo mcp`` request or an unreadable ``mcp.json``."""


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``~/.avo/mcp.json`` (``HOME`` from ``environ`` when given)."""
    home = (environ or {}).get("HOME")
    return (Path(home) if home else Path.home()) / ".avo" / "mcp.json"


MCP_CONFIG_PATH = default_config_path()


def _default_path(environ: Mapping[str, str] | None) -> Path:
    return MCP_CONFIG_PATH if environ is None else default_config_path(environ)


def looks_secret(key: str) -> bool:
    """True for env keys whose values must not be printed (``*_TOKEN``, ``API_KEY``...)."""
    upper = key.upper()
    return any(marker in upper for marker in SECRET_MARKERS)


def validate_name(name: str) -> str:
    """Return ``name`` or raise McpCliError naming the allowed characters."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise McpCliError(
            f"invalid MCP server name {name!r}: use letters, digits, '_', '.' and '-' only"
        )
    return name


def _string_map(name: str, entry: dict[str, Any], key: str, path: Path) -> dict[str, str]:
    value = entry.get(key) or {}
    if not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
        raise McpCliError(f"{path}: server {name!r} has a {key!r} that is not string to string")
    return dict(value)


def _check_entry(name: str, entry: Any, path: Path) -> ServerEntry:
    if not isinstance(entry, dict):
        raise McpCliError(
            f"{path}: server {name!r} must be an object with a 'command' list or a 'url'"
        )
    url = entry.get("url")
    if url is not None:  # streamable HTTP
        if not isinstance(url, str) or not url.startswith(("http://", "https://", "${")):
            raise McpCliError(f"{path}: server {name!r} has a 'url' that is not http(s)")
        checked = {"url": url, "headers": _string_map(name, entry, "headers", path)}
        if entry.get("oauth") is not None:
            checked["oauth"] = _string_map(name, entry, "oauth", path)
            unknown = set(checked["oauth"]) - set(OAUTH_KEYS)
            if unknown:
                raise McpCliError(
                    f"{path}: server {name!r} has unknown 'oauth' keys {sorted(unknown)}; "
                    f"use {', '.join(OAUTH_KEYS)}"
                )
        return checked
    command = entry.get("command")
    if isinstance(command, str):  # Claude Code style: "command": "npx", "args": [...]
        args = entry.get("args") or []
        command = [command, *args]
    if not (isinstance(command, list) and command and all(isinstance(c, str) for c in command)):
        raise McpCliError(
            f"{path}: server {name!r} needs a non-empty 'command' list of strings or a 'url'"
        )
    return {"command": list(command), "env": _string_map(name, entry, "env", path)}


def load_servers(
    path: Path | str | None = None, *, environ: Mapping[str, str] | None = None
) -> dict[str, ServerEntry]:
    """Every configured server by name; an absent file means none.

    Without ``path`` the file is ``~/.avo/mcp.json`` under ``environ``'s ``HOME``.
    """
    config = Path(path) if path is not None else _default_path(environ)
    if not config.exists():
        return {}
    try:
        data = json.loads(config.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise McpCliError(f"cannot read MCP config {config}: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
        data = data["mcpServers"]
    if not isinstance(data, dict):
        raise McpCliError(f"{config}: expected a JSON object of servers by name")
    return {name: _check_entry(name, entry, config) for name, entry in data.items()}


def save_servers(servers: Mapping[str, ServerEntry], path: Path | str | None = None) -> Path:
    """Write the server table atomically (0600: env values may hold secrets)."""
    config = Path(path) if path is not None else MCP_CONFIG_PATH
    config.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=config.parent, prefix=".mcp.", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(dict(servers), handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, config)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return config


def parse_header(text: str) -> tuple[str, str]:
    """``"Authorization: Bearer x"`` or ``"Authorization=Bearer x"`` as (name, value).

    The curl form (``Name: value``) is read when a colon comes before any ``=``.
    """
    colon, equals = text.find(":"), text.find("=")
    if colon > 0 and (equals < 0 or colon < equals):
        name, value = text[:colon], text[colon + 1 :].strip()
    elif equals > 0:
        name, value = text[:equals], text[equals + 1 :]
    else:
        raise McpCliError(
            f"--header expects 'Name: value' or Name=value, got {text!r}; "
            'e.g. --header "Authorization: Bearer ${TOKEN}"'
        )
    name = name.strip()
    if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
        raise McpCliError(f"--header name {name!r} is not a valid HTTP header name")
    return name, value


def expand_vars(text: str, environ: Mapping[str, str]) -> str:
    """Expand ``${VAR}`` / ``$VAR`` from ``environ``; unknown variables stay as written."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return environ.get(name, match.group(0))

    return _VAR.sub(replace, text)


def resolve_env(entry: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> ServerEntry:
    """The entry with ``${VAR}`` expanded in its command/env (or url/headers) values."""
    env_source = os.environ if environ is None else environ
    if "url" in entry:
        resolved: ServerEntry = {
            "url": expand_vars(entry["url"], env_source),
            "headers": {
                k: expand_vars(v, env_source) for k, v in (entry.get("headers") or {}).items()
            },
        }
        if entry.get("oauth"):
            resolved["oauth"] = {k: expand_vars(v, env_source) for k, v in entry["oauth"].items()}
        return resolved
    return {
        "command": [expand_vars(part, env_source) for part in entry.get("command", [])],
        "env": {k: expand_vars(v, env_source) for k, v in (entry.get("env") or {}).items()},
    }


def servers_from_config(
    path: Path | str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    timeout_seconds: float | None = None,
    features: ClientFeatures | None = None,
    interactive_auth: bool = False,
) -> list[MCPSession]:
    """An unstarted server per configured entry (what the REPL boots).

    ``command`` entries become :class:`MCPServer` (stdio), ``url`` entries
    :class:`~avo_mcp.http_client.MCPHttpServer` (streamable HTTP). ``environ``
    is used throughout: for ``~`` (its ``HOME``) when ``path`` is not given,
    for ``${VAR}`` expansion, and as what a stdio server's minimal
    environment is copied from. ``features`` (roots, sampling, progress) is
    offered by every connection.

    A ``url`` entry without an ``Authorization`` header uses OAuth when the
    server asks for it: tokens stored by ``avo mcp login NAME`` (in
    ``~/.avo/mcp-oauth.json``) are sent and refreshed; with
    ``interactive_auth=True`` a missing authorization opens the browser, else
    the error says to run ``avo mcp login NAME``.
    """
    servers: list[MCPSession] = []
    for name, entry in load_servers(path, environ=environ).items():
        resolved = resolve_env(entry, environ)
        extra: dict[str, Any] = {}
        if timeout_seconds is not None:
            extra["timeout_seconds"] = timeout_seconds
        if features is not None:
            extra["features"] = features
        if "url" in resolved:
            from avo_mcp.http_client import MCPHttpServer

            if not any(key.lower() == "authorization" for key in resolved["headers"]):
                extra["auth"] = oauth_client(name, resolved, environ, interactive=interactive_auth)
            servers.append(
                MCPHttpServer(url=resolved["url"], headers=resolved["headers"], name=name, **extra)
            )
            continue
        servers.append(
            MCPServer(
                command=resolved["command"],
                env=resolved["env"],
                name=name,
                environ=environ,
                **extra,
            )
        )
    return servers


def oauth_client(
    name: str,
    entry: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    interactive: bool = False,
    open_browser: Any = None,
) -> Any:
    """The OAuth client of a ``url`` entry, storing tokens in ``~/.avo/mcp-oauth.json``."""
    from avo_mcp.oauth import OAuthClient, OAuthConfig, TokenStore, default_token_path

    settings = dict(entry.get("oauth") or {})
    config = OAuthConfig(
        client_id=settings.get("client_id") or None,
        client_secret=settings.get("client_secret") or None,
        scope=settings.get("scope") or None,
        client_metadata_url=settings.get("client_metadata_url") or None,
        interactive=interactive,
        login_hint=f"avo mcp login {name}",
        open_browser=open_browser,
    )
    store = TokenStore(default_token_path(environ))
    return OAuthClient(entry["url"], config=config, store=store)


__all__ = [
    "MCP_CONFIG_PATH",
    "NAME_PATTERN",
    "McpCliError",
    "default_config_path",
    "expand_vars",
    "load_servers",
    "oauth_client",
    "looks_secret",
    "parse_header",
    "resolve_env",
    "save_servers",
    "servers_from_config",
    "validate_name",
]
