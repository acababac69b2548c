"""A hand-written newline-JSON-RPC MCP server that misbehaves on request.

The SDK diverts fd 1 away from the wire, so a server written with it cannot
corrupt its own stdout; this one can. It also starts in milliseconds, which
keeps the failure-mode tests fast. ``python raw_server.py [garbage-at-start]``.

Tools: ``garbage`` answers with a non-JSON line on the protocol channel,
``crash`` exits with code 3 mid-call, ``hang`` never answers, ``boom`` answers
with a tool error (``isError: true``), ``spawn_then_crash`` leaves a grandchild
behind and exits, ``echo`` pings the client and asks it for sampling first.
"""

from __future__ import annotations

import json
import os
import sys
import time

TOOLS = ["garbage", "crash", "hang", "deaf", "boom", "echo", "spawn_then_crash"]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(request_id: object, name: str, arguments: dict) -> None:
    if name == "garbage":
        sys.stdout.write("<html>oops, this is not JSON-RPC</html>\n")
        sys.stdout.flush()
    elif name == "crash":
        sys.stderr.write("crash tool: exiting now\n")
        sys.stderr.flush()
        os._exit(3)
    elif name in ("hang", "deaf"):
        # hang: never answers; deaf: never answers nor reads stdin again, so the
        # client's writes fill the pipe.
        while True:
            time.sleep(1)
    elif name == "boom":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "content": [{"type": "text", "text": "the boom tool always fails"}],
                    "isError": True,
                },
            }
        )
    elif name == "spawn_then_crash":
        # A grandchild that inherits stdout/stderr outlives this process unless the
        # client ends the whole process group.
        import subprocess

        child = subprocess.Popen(["sleep", "300"])
        with open(arguments["pid_file"], "w") as handle:
            handle.write(str(child.pid))
        os._exit(4)
    else:
        # Ask the client something first (a server -> client request), as real
        # servers do with ping / roots/list, and report what it answered.
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
        ping_reply = json.loads(sys.stdin.readline())
        send({"jsonrpc": "2.0", "id": "srv-2", "method": "sampling/createMessage"})
        sampling_reply = json.loads(sys.stdin.readline())
        text = json.dumps({"arguments": arguments, "ping": ping_reply, "sampling": sampling_reply})
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"content": [{"type": "text", "text": text}]},
            }
        )


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
                                "name": name,
                                "description": f"The {name} tool.",
                                "inputSchema": {"type": "object", "properties": {}},
                            }
                            for name in TOOLS
                        ]
                    },
                }
            )
        elif method == "tools/call":
            params = message["params"]
            call(request_id, params["name"], params.get("arguments") or {})


if __name__ == "__main__":
    main()
