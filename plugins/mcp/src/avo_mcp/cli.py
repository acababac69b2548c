"""``avo mcp add|list|remove`` and ``avo serve-mcp``."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from avo_mcp.config import (
    McpCliError,
    default_config_path,
    load_servers,
    looks_secret,
    parse_header,
    save_servers,
    validate_name,
)

# ------------------------------------------------------------------ serve-mcp


def configure_serve(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``avo serve-mcp``."""
    parser.add_argument(
        "--workspace-root",
        type=Path,
        default=None,
        metavar="DIR",
        help="workspace the file tools and avo://workspace/ resources are bound to "
        "(default: the current directory)",
    )
    parser.add_argument(
        "--tool",
        action="append",
        dest="tools",
        default=None,
        metavar="NAME",
        help="serve this tool plugin (repeatable; see `avo plugin list`) instead of the "
        "default read_file, write_file, edit_file, glob, grep, git_status",
    )
    parser.add_argument(
        "--http",
        action="store_true",
        help="serve over streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind with --http (default 127.0.0.1: this machine only)",
    )
    parser.add_argument(
        "--port", type=int, default=8765, help="port for --http (default 8765; 0 picks a free one)"
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also accept this Host/Origin name with --http (loopback names always are)",
    )
    parser.add_argument(
        "--json-response",
        action="store_true",
        help="with --http, answer every request with one JSON body, never an event stream "
        "(by default a tools/call from a client that accepts text/event-stream is streamed, "
        "carrying the tool's progress)",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        metavar="N",
        help="with --http, keep at most N sessions (default 256; a new one past that pushes "
        "out the one idle the longest)",
    )
    parser.add_argument(
        "--session-idle",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --http, end a session idle this long (default 3600)",
    )


def _registry_from_plugins(names: list[str], manager: Any) -> Any:
    """A registry of the named ``avo.tools`` plugins, built with default settings."""
    from avo.tools import ToolRegistry

    tools: list[Any] = []
    for name in names:
        spec = manager.get("tool", name)
        model = getattr(spec, "settings_model", None)
        settings = model().model_dump() if model is not None else {}
        made = spec.factory(settings)
        tools.extend(made if isinstance(made, list | tuple) else [made])
    return ToolRegistry(tools)


def run_serve(args: argparse.Namespace) -> int:
    """Serve the default tool registry over MCP stdio until stdin closes."""
    from avo_mcp.registry import build_default_registry
    from avo_mcp.server import AvoMcpServer

    root = (args.workspace_root or Path.cwd()).expanduser()
    if not root.is_dir():
        raise McpCliError(f"--workspace-root {root} is not a directory; pass an existing directory")
    from avo_mcp import __version__

    if args.tools:
        manager = getattr(args, "avo_plugins", None)
        if manager is None:
            from avo.plugins.manager import PluginManager

            manager = PluginManager(environ=getattr(args, "avo_environ", None))
        registry = _registry_from_plugins(args.tools, manager)
    else:
        registry = build_default_registry()

    def make_server() -> AvoMcpServer:
        return AvoMcpServer(
            registry,
            server_version=__version__,
            workspace_root=root,
            environ=getattr(args, "avo_environ", None),
        )

    from avo.gc_tuning import tune_gc_for_server

    # a long-running server: freeze what start-up loaded, fewer collections (docs/operations.md)
    tune_gc_for_server(getattr(args, "avo_environ", None))
    if getattr(args, "http", False):
        import asyncio

        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve_http(make_server, args))
        return 0
    make_server().serve_stdio()
    return 0


async def _serve_http(make_server: Callable[[], Any], args: argparse.Namespace) -> None:
    from avo_mcp.http_server import McpHttpServer

    if not 0 <= args.port <= 65535:
        raise McpCliError(f"--port {args.port} is not a port number; use 0..65535")
    limits: dict[str, Any] = {}
    if getattr(args, "max_sessions", None) is not None:
        if args.max_sessions < 1:
            raise McpCliError(f"--max-sessions {args.max_sessions} must be at least 1")
        limits["max_sessions"] = args.max_sessions
    if getattr(args, "session_idle", None) is not None:
        if not args.session_idle > 0:
            raise McpCliError(f"--session-idle {args.session_idle:g} must be more than 0 seconds")
        limits["session_idle_seconds"] = args.session_idle
    server = McpHttpServer(
        make_server,
        allowed_hosts=args.allow_host,
        json_response=getattr(args, "json_response", False),
        **limits,
    )
    try:
        host, port = await server.start(args.host, args.port)
    except OSError as exc:
        raise McpCliError(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror}); pick another --port"
        ) from None
    shown = f"[{host}]" if ":" in host else host
    print(f"avo serve-mcp: MCP over HTTP at http://{shown}:{port}/mcp", file=sys.stderr, flush=True)
    try:
        await server.serve_forever()
    finally:
        await server.close()


# ------------------------------------------------------------------------ mcp


def configure_mcp(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``avo mcp``."""
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="PATH",
        help="server list to edit (default: ~/.avo/mcp.json)",
    )
    sub = parser.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND", required=True)
    add = sub.add_parser("add", help="add (or replace) an MCP server")
    add.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="environment for it"
    )
    add.add_argument(
        "--url", default=None, help="a streamable HTTP server's endpoint instead of a command"
    )
    add.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="HEADER",
        help='HTTP header for a --url server: "Name: value" or Name=value '
        '(e.g. "Authorization: Bearer ${TOKEN}")',
    )
    add.add_argument("name", help="server name ([A-Za-z0-9_.-]+)")
    add.add_argument(
        "server_command", nargs=argparse.REMAINDER, metavar="command", help="argv to start it"
    )
    listing = sub.add_parser("list", help="list configured MCP servers (secrets masked)")
    listing.add_argument(
        "--json", action="store_true", help="print a JSON array (secrets masked the same way)"
    )
    remove = sub.add_parser("remove", help="remove an MCP server")
    remove.add_argument("name")
    remove.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    from avo_mcp import cli_session

    cli_session.configure(sub)


def _split_options(args: argparse.Namespace) -> tuple[list[str], list[str], str | None, list[str]]:
    """Move options argparse left in the trailing argv back where they belong.

    argparse cannot interleave ``--env``/``--header``/``--url`` with a variadic
    trailing command, so ``avo mcp add NAME --env K=V cmd ...`` leaves them at
    the head of the command; this makes every order mean the same. ``--`` ends
    the options.
    """
    env, headers, url = list(args.env), list(args.header), args.url
    rest = list(args.server_command)
    lists = {"--env": env, "--header": headers}
    while rest:
        head = rest[0]
        flag, eq, inline = head.partition("=")
        if head == "--":
            rest.pop(0)
            break
        if flag in (*lists, "--url") and (eq or len(rest) > 1):
            value = inline if eq else rest[1]
            del rest[: 1 if eq else 2]
            if flag == "--url":
                url = value
            else:
                lists[flag].append(value)
        else:
            break
    return env, headers, url, rest


def _parse_env(pairs: list[str], flag: str = "--env") -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise McpCliError(f"{flag} expects KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def _mask(env: Mapping[str, str]) -> str:
    return " ".join(f"{k}={'***' if looks_secret(k) else v}" for k, v in sorted(env.items()))


def _masked(values: Mapping[str, str]) -> dict[str, str]:
    return {k: "***" if looks_secret(k) else v for k, v in sorted(values.items())}


def _listing(servers: Mapping[str, Mapping[str, Any]], path: Path) -> list[dict[str, Any]]:
    """``avo mcp list --json``: one object per server, secrets masked as in the table."""
    rows: list[dict[str, Any]] = []
    for name, entry in sorted(servers.items()):
        if "url" in entry:
            row = {"name": name, "transport": "http", "url": entry["url"]}
            row["headers"] = _masked(entry.get("headers") or {})
        else:
            row = {"name": name, "transport": "stdio", "command": list(entry["command"])}
            row["env"] = _masked(entry.get("env") or {})
        rows.append({**row, "config": str(path)})
    return rows


def run_mcp(
    args: argparse.Namespace,
    *,
    stdout: TextIO | None = None,
    input_fn: Callable[[str], str] | None = None,
) -> int:
    """Dispatch ``avo mcp`` subcommands."""
    out = stdout or sys.stdout
    path = args.config or default_config_path(getattr(args, "avo_environ", None))
    servers = load_servers(path)
    if args.mcp_command == "add":
        name = validate_name(args.name)
        env_pairs, header_pairs, url, command = _split_options(args)
        entry: dict[str, Any]
        if url is not None:
            if command or env_pairs:
                raise McpCliError(
                    f"avo mcp add {name}: give either --url or a command (with --env), not both"
                )
            if not url.startswith(("http://", "https://")):
                raise McpCliError(f"--url must be an http(s) URL, got {url!r}")
            entry = {"url": url, "headers": dict(parse_header(h) for h in header_pairs)}
        elif not command:
            raise McpCliError(
                f"avo mcp add {name}: give the command that starts the server, "
                "e.g. avo mcp add fs npx -y @modelcontextprotocol/server-filesystem ."
            )
        elif header_pairs:
            raise McpCliError("--header only applies to --url servers")
        else:
            entry = {"command": command, "env": _parse_env(env_pairs)}
        replaced = name in servers
        servers[name] = entry
        save_servers(servers, path)
        print(f"{'updated' if replaced else 'added'} MCP server {name} in {path}", file=out)
        return 0
    if args.mcp_command == "list":
        if getattr(args, "json", False):
            print(json.dumps(_listing(servers, path), indent=2), file=out)
            return 0
        if not servers:
            print(f"no MCP servers configured in {path}; add one with `avo mcp add`", file=out)
            return 0
        width = max(len("NAME"), *(len(n) for n in servers))
        print(f"{'NAME':<{width}}  COMMAND", file=out)
        for name, entry in sorted(servers.items()):
            if "url" in entry:
                line = f"{name:<{width}}  {entry['url']}"
                if entry["headers"]:
                    line += f"  [headers: {_mask(entry['headers'])}]"
            else:
                line = f"{name:<{width}}  {' '.join(entry['command'])}"
                if entry["env"]:
                    line += f"  [env: {_mask(entry['env'])}]"
            print(line, file=out)
        return 0
    if args.mcp_command == "remove":
        name = args.name
        if name not in servers:
            known = ", ".join(sorted(servers)) or "none"
            raise McpCliError(f"no MCP server named {name!r} in {path} (configured: {known})")
        if not args.yes:
            ask = input_fn or input
            try:
                answer = ask(f"Remove MCP server {name!r}? [y/N] ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                print("aborted; nothing removed", file=out)
                return 1
        del servers[name]
        save_servers(servers, path)
        print(f"removed MCP server {name} from {path}", file=out)
        return 0
    if args.mcp_command in ("login", "logout", "show", "prompt"):
        from avo_mcp import cli_session

        return cli_session.run(args, servers, path, out)
    raise McpCliError(f"unknown avo mcp subcommand {args.mcp_command!r}")  # pragma: no cover


__all__ = ["configure_mcp", "configure_serve", "run_mcp", "run_serve"]
