"""``avo mcp login|logout|show|prompt``: the subcommands that talk to a configured server.

- ``login NAME``: run the OAuth flow for a ``--url`` server (browser + loopback
  redirect) and store its tokens in ``~/.avo/mcp-oauth.json``;
- ``logout NAME``: forget them;
- ``show NAME``: connect and list what the server offers (tools, resources,
  prompts) with its instructions;
- ``prompt NAME PROMPT [ARG=VALUE]...``: render one of the server's prompts
  as text, to read or to hand to ``avo run``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from avo_mcp.config import McpCliError, ServerEntry, oauth_client, resolve_env, servers_from_config


def configure(sub: Any) -> None:
    """Add the subcommands to ``avo mcp``'s subparsers."""
    login = sub.add_parser("login", help="authorize avo with a --url server (OAuth, in a browser)")
    login.add_argument("name")
    login.add_argument(
        "--no-browser", action="store_true", help="only print the URL to open, do not open it"
    )
    logout = sub.add_parser("logout", help="forget the OAuth tokens of a --url server")
    logout.add_argument("name")
    show = sub.add_parser("show", help="connect to a server and list its tools, resources, prompts")
    show.add_argument("name")
    prompt = sub.add_parser("prompt", help="print one of a server's prompts, rendered")
    prompt.add_argument("name")
    prompt.add_argument("prompt", metavar="PROMPT")
    prompt.add_argument("arguments", nargs="*", metavar="ARG=VALUE")


def run(
    args: argparse.Namespace,
    servers: Mapping[str, ServerEntry],
    path: Path,
    out: TextIO,
) -> int:
    """Run one of these subcommands."""
    environ = getattr(args, "avo_environ", None)
    name = args.name
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none"
        raise McpCliError(f"no MCP server named {name!r} in {path} (configured: {known})")
    entry = resolve_env(servers[name], environ)
    if args.mcp_command in ("login", "logout"):
        if "url" not in entry:
            raise McpCliError(f"{name} is a stdio server; login applies to --url servers only")
        opener = _print_only(out) if getattr(args, "no_browser", False) else None
        auth = oauth_client(name, entry, environ, interactive=True, open_browser=opener)
        if args.mcp_command == "logout":
            found = auth.forget()
            print(f"{'forgot' if found else 'no'} OAuth tokens for {name}", file=out)
            return 0
        return asyncio.run(_login(name, entry, auth, out))
    (server,) = [s for s in servers_from_config(path, environ=environ) if s.name == name]
    if args.mcp_command == "show":
        return asyncio.run(_show(server, out))
    arguments = {}
    for pair in args.arguments:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise McpCliError(f"prompt arguments are ARG=VALUE, got {pair!r}")
        arguments[key] = value
    return asyncio.run(_prompt(server, args.prompt, arguments, out))


def _print_only(out: TextIO) -> Any:
    def show(url: str) -> None:
        print(f"open this URL to authorize avo:\n  {url}", file=out, flush=True)

    return show


async def _login(name: str, entry: ServerEntry, auth: Any, out: TextIO) -> int:
    import httpx

    from avo_mcp.http_client import MCPHttpServer

    server = MCPHttpServer(url=entry["url"], headers=entry["headers"], name=name, auth=auth)
    try:
        async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
            if await auth.access_token(http) is None:
                await auth.authorize(http)
        await server.start()  # proves the token works (and refreshes or re-authorizes if not)
    finally:
        await server.stop()
    print(f"authorized avo with {name}; tokens stored in {auth.store.path}", file=out)
    return 0


async def _show(server: Any, out: TextIO) -> int:
    await server.start()
    try:
        info = server.server_info
        print(
            f"{server.name}: {info.get('name', '?')} {info.get('version', '')}".rstrip(), file=out
        )
        if server.instructions:
            print(f"instructions: {server.instructions}", file=out)
        print("tools:", file=out)
        for tool in server.tools:
            summary = str(tool.get("description") or "").strip().splitlines()
            print(f"  {tool['name']}  {summary[0] if summary else ''}".rstrip(), file=out)
        if "resources" in server.capabilities:
            print("resources:", file=out)
            for resource in await server.list_resources():
                print(f"  {resource.get('uri')}  {resource.get('name', '')}".rstrip(), file=out)
        if "prompts" in server.capabilities:
            print("prompts:", file=out)
            for prompt in await server.list_prompts():
                names = [a.get("name") for a in prompt.get("arguments") or []]
                args = f" ({', '.join(str(n) for n in names)})" if names else ""
                print(f"  {prompt.get('name')}{args}", file=out)
    finally:
        await server.stop()
    return 0


async def _prompt(server: Any, name: str, arguments: dict[str, str], out: TextIO) -> int:
    from avo_mcp.results import ToolOutput, convert_item

    await server.start()
    try:
        if "prompts" not in server.capabilities:
            raise McpCliError(f"MCP server {server.name!r} offers no prompts")
        result = await server.get_prompt(name, arguments)
    finally:
        await server.stop()
    for message in result.get("messages") or []:
        part = convert_item(message.get("content"))
        text = ToolOutput(parts=(part,) if part else ()).for_model()
        print(f"[{message.get('role', 'user')}]\n{text}", file=out)
    return 0


__all__ = ["configure", "run"]
