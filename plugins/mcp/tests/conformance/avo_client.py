"""The client under test for the MCP conformance suite: avo's streamable HTTP client.

``python avo_client.py SERVER_URL`` (the suite appends the URL and sets
``MCP_CONFORMANCE_SCENARIO``): connect, list the tools, call each one with
arguments that fit its schema, disconnect. Exit 0 on success, 1 (with the
error on stderr) otherwise.
"""

from __future__ import annotations

import asyncio
import os
import sys

from avo.exceptions import AvoError
from avo_mcp import MCPClient, MCPHttpServer
from avo_mcp.features import ClientFeatures

ARGUMENTS = {"add_numbers": {"a": 2, "b": 3}}


async def main(url: str) -> None:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    server = MCPHttpServer(
        url=url,
        name="conformance",
        timeout_seconds=20,
        features=ClientFeatures(on_progress=lambda update: print(update.describe())),
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
