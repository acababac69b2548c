"""A hand-written newline-JSON-RPC MCP server that misbehaves on request.

The SDK diverts fd 1 away from the wire, so a server written with it cannot
corrupt its own stdout; this one can. ``python raw_server.py [garbage-at-start]``.
Tool ``garbage`` answers a call with a non-JSON line on the protocol channel.
"""

from __future__ import annotations

import json
import sys


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    if "garbage-at-start" in sys.argv:
        sys.stdout.write("Starting server v1.0...\n")
        sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "raw", "version": "0"},
                    },
                }
            )
        elif method == "tools/list":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "tools": [
                            {
                                "name": "garbage",
                                "description": "Answers with garbage.",
                                "inputSchema": {"type": "object", "properties": {}},
                            }
                        ]
                    },
                }
            )
        elif method == "tools/call":
            sys.stdout.write("<html>oops, this is not JSON-RPC</html>\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
