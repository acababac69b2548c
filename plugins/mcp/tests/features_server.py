"""A hand-written stdio MCP server exercising what real servers send a client.

Names that collide once sanitised (``weather.get`` / ``weather_get``, two long
names sharing 64 characters), every content type (text, image, audio,
embedded text and binary resources, resource links), structured content,
a 3 MB result, progress notifications, sampling and roots requests, a tool
list that changes, and a server that dies by a signal.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 60).decode()
LONG_A = "a" * 64 + "_first"
LONG_B = "a" * 64 + "_second"
TOOLS = [
    "weather.get",
    "weather_get",
    LONG_A,
    LONG_B,
    "media",
    "structured",
    "structured_only",
    "big",
    "env",
    "progress",
    "sample",
    "roots",
    "change",
    "kill_self",
    "elicit",
]
extra_tools: list[str] = []


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask(method: str, params: dict | None = None) -> dict:
    """Send a request to the client and read its reply (the next message)."""
    send({"jsonrpc": "2.0", "id": f"srv-{method}", "method": method, "params": params or {}})
    while True:
        message = json.loads(sys.stdin.readline())
        if message.get("id") == f"srv-{method}":
            return message


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


def call(name: str, arguments: dict, meta: dict) -> dict:
    if name in ("weather.get", "weather_get", LONG_A, LONG_B) or name in extra_tools:
        return text(f"called {name}")
    if name == "media":
        return {
            "content": [
                {"type": "text", "text": "here is a chart"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {
                    "type": "audio",
                    "data": base64.b64encode(b"RIFF" * 10).decode(),
                    "mimeType": "audio/wav",
                },
                {
                    "type": "resource",
                    "resource": {
                        "uri": "file:///notes.md",
                        "mimeType": "text/markdown",
                        "text": "# Notes",
                    },
                },
                {
                    "type": "resource",
                    "resource": {
                        "uri": "file:///data.json",
                        "mimeType": "application/json",
                        "blob": base64.b64encode(b'{"k": 1}').decode(),
                    },
                },
                {
                    "type": "resource",
                    "resource": {
                        "uri": "file:///bin",
                        "mimeType": "application/zip",
                        "blob": "UEsDBA==",
                    },
                },
                {"type": "resource_link", "uri": "test://static/1", "name": "Resource 1"},
            ]
        }
    if name == "structured":
        data = {"temperature": 21, "unit": "C"}
        return {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}
    if name == "structured_only":
        return {"content": [], "structuredContent": {"rows": [1, 2]}}
    if name == "big":
        return text("x" * (3 * 1024 * 1024))
    if name == "env":
        return text(json.dumps(sorted(os.environ)))
    if name == "progress":
        token = meta.get("progressToken")
        for step in (1, 2, 3):
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {
                        "progressToken": token,
                        "progress": step,
                        "total": 3,
                        "message": f"step {step}",
                    },
                }
            )
        return text(f"token {token}")
    if name == "sample":
        reply = ask(
            "sampling/createMessage",
            {
                "messages": [
                    {
                        "role": "user",
                        "content": {"type": "text", "text": arguments.get("prompt", "hi")},
                    }
                ],
                "maxTokens": 50,
            },
        )
        return text(json.dumps(reply))
    if name == "roots":
        return text(json.dumps(ask("roots/list")))
    if name == "change":
        extra_tools.append("added_later")
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return text("changed")
    if name == "elicit":
        schema = {"type": "object", "properties": {"city": {"type": "string", "default": "Paris"}}}
        return text(
            json.dumps(
                ask("elicitation/create", {"message": "Which city?", "requestedSchema": schema})
            )
        )
    if name == "kill_self":
        os.kill(os.getpid(), signal.SIGKILL)
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None or method is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}, "resources": {}},
                "serverInfo": {"name": "features", "version": "0"},
                "instructions": json.dumps(params.get("capabilities")),
            }
        elif method == "tools/list":
            result = {
                "tools": [
                    {"name": name, "inputSchema": {"type": "object"}}
                    for name in [*TOOLS, *extra_tools]
                ]
            }
        elif method == "tools/call":
            result = call(params["name"], params.get("arguments") or {}, params.get("_meta") or {})
        elif method == "resources/list":
            result = {
                "resources": [
                    {"uri": "test://static/1", "name": "Resource 1", "mimeType": "text/plain"}
                ]
            }
        elif method == "resources/read":
            result = {
                "contents": [
                    {"uri": params["uri"], "mimeType": "text/plain", "text": "resource one"}
                ]
            }
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": method}})
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
