"""The client under test for the MCP conformance suite: avo's streamable HTTP client.

``python avo_client.py SERVER_URL`` (the suite appends the URL and sets
``MCP_CONFORMANCE_SCENARIO``, and ``MCP_CONFORMANCE_CONTEXT`` with
pre-registered client credentials where a scenario has them): connect
(authorizing with OAuth when the server asks), list the tools, call each one
with arguments that fit its schema, disconnect. Exit 0 on success, 1 (with
the error on stderr) otherwise.

The "browser" that the authorization URL is opened in is an HTTP client that
follows the authorization server's redirect to avo's loopback listener, as a
browser would once the user approved. A server's elicitation is answered in
place by a "person" who accepts the form as offered (the reply ``{}``, read
by avo's form reader, which fills in the schema's defaults); this client runs
no agent loop, so there is no run to pause (tests/test_mcp_elicitation.py
covers the durable pause).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx

from avo.exceptions import AvoError
from avo_mcp import MCPClient, MCPHttpServer
from avo_mcp.features import ClientFeatures, ReplyElicitation
from avo_mcp.oauth import OAuthClient, OAuthConfig

ARGUMENTS = {"add_numbers": {"a": 2, "b": 3}}
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def browser(url: str) -> None:
    async with httpx.AsyncClient(follow_redirects=True, trust_env=False) as http:
        await http.get(url)


async def main(url: str) -> None:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    auth = OAuthClient(
        url,
        config=OAuthConfig(
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            client_metadata_url=CLIENT_METADATA_URL,
            open_browser=browser,
            timeout_seconds=20,
        ),
    )
    server = MCPHttpServer(
        url=url,
        name="conformance",
        timeout_seconds=20,
        features=ClientFeatures(
            on_progress=lambda update: print(update.describe()),
            elicitation=ReplyElicitation(lambda request: "{}"),
        ),
        auth=auth,
    )
    async with MCPClient(server) as client:
        for tool in client.tools():
            if getattr(tool, "remote_name", None) is None:
                continue  # avo's own list_resources / read_resource helpers
            output = await tool.invoke(ARGUMENTS.get(tool.remote_name, {}))
            print(f"[{scenario}] {tool.remote_name}: {output[:200]}")


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1]))
    except AvoError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        sys.exit(1)
