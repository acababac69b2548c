"""AvoMcpServer's wire contract, message by message."""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from avo.exceptions import MCPError
from avo.models import ToolRisk
from avo.tools import FunctionTool, ToolRegistry
from avo_mcp import AvoMcpServer, MCPClient, MCPServer
from avo_mcp.resources import RESOURCE_LIMIT
from avo_mcp.server import CAPABILITIES


class EchoArgs(BaseModel):
    text: str


class NoArgs(BaseModel):
    pass


def _registry() -> ToolRegistry:
    async def slow(_: NoArgs) -> str:
        await asyncio.sleep(60)
        return "late"

    def fail(_: NoArgs) -> str:
        raise RuntimeError("disk on fire")

    return ToolRegistry(
        [
            FunctionTool(
                name="echo",
                description="Echo a text.",
                arguments_model=EchoArgs,
                function=lambda a: {"echo": a.text},
                risk=ToolRisk.INSPECT,
            ),
            FunctionTool(
                name="plain",
                description="Returns a string.",
                arguments_model=NoArgs,
                function=lambda a: "just text",
                risk=ToolRisk.MODIFY,
            ),
            FunctionTool(name="slow", description="Sleeps.", arguments_model=NoArgs, function=slow),
            FunctionTool(name="fail", description="Fails.", arguments_model=NoArgs, function=fail),
        ]
    )


def _req(request_id: int, method: str, params: dict | None = None) -> dict:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def _initialized(server: AvoMcpServer, version: str | None = "2025-06-18") -> dict:
    params = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    if version is not None:
        params["protocolVersion"] = version
    return await server.handle(_req(1, "initialize", params))


async def test_lifecycle_gate_and_shutdown() -> None:
    server = AvoMcpServer(_registry(), server_name="unit", server_version="9")
    before = await server.handle(_req(1, "tools/list"))
    assert before["error"]["code"] == -32002
    assert (await server.handle(_req(2, "ping")))["result"] == {}  # ping is always allowed
    init = await _initialized(server)
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert init["result"]["serverInfo"] == {"name": "unit", "version": "9"}
    # no workspace: no resources; never prompts (avo serves none)
    assert init["result"]["capabilities"] == {
        key: value for key, value in CAPABILITIES.items() if key != "resources"
    }
    assert "prompts" not in CAPABILITIES
    assert "result" in await server.handle(_req(3, "tools/list"))
    assert (await server.handle(_req(4, "shutdown")))["result"] == {}
    after = await server.handle(_req(5, "tools/call", {"name": "echo", "arguments": {}}))
    assert after["error"]["code"] == -32002
    assert (await server.handle(_req(6, "initialize", {})))["error"]["code"] == -32002


@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        (None, "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ],
)
async def test_protocol_version_negotiation(offered, answered) -> None:
    server = AvoMcpServer(_registry())
    assert (await _initialized(server, offered))["result"]["protocolVersion"] == answered


async def test_tools_list_annotations_from_risk() -> None:
    server = AvoMcpServer(_registry(), environ={"AVO_TOOLS_REQUIRE_APPROVAL": "plain, other"})
    await _initialized(server)
    tools = {t["name"]: t for t in (await server.handle(_req(2, "tools/list")))["result"]["tools"]}
    assert tools["echo"]["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert tools["echo"]["inputSchema"]["required"] == ["text"]
    # MODIFY and in AVO_TOOLS_REQUIRE_APPROVAL
    assert tools["plain"]["annotations"]["destructiveHint"] is True
    assert tools["plain"]["annotations"]["openWorldHint"] is True
    # no declared risk -> EXECUTE -> destructive
    assert tools["fail"]["annotations"]["readOnlyHint"] is False
    assert tools["fail"]["annotations"]["destructiveHint"] is True


async def test_tools_call_results_and_errors() -> None:
    server = AvoMcpServer(_registry())
    await _initialized(server)
    ok = await server.handle(_req(2, "tools/call", {"name": "echo", "arguments": {"text": "x"}}))
    assert ok["result"]["isError"] is False
    assert ok["result"]["structuredContent"] == {"echo": "x"}
    assert json.loads(ok["result"]["content"][0]["text"]) == {"echo": "x"}
    plain = await server.handle(_req(3, "tools/call", {"name": "plain"}))
    assert plain["result"]["content"][0]["text"] == "just text"
    assert "structuredContent" not in plain["result"]
    failed = await server.handle(_req(4, "tools/call", {"name": "fail", "arguments": {}}))
    assert failed["result"]["isError"] is True
    assert "disk on fire" in failed["result"]["content"][0]["text"]
    invalid = await server.handle(_req(5, "tools/call", {"name": "echo", "arguments": {}}))
    assert invalid["result"]["isError"] is True
    unknown = await server.handle(_req(6, "tools/call", {"name": "nope"}))
    assert unknown["result"]["isError"] is True
    no_name = await server.handle(_req(7, "tools/call", {}))
    assert no_name["error"]["code"] == -32602
    bad_args = await server.handle(_req(8, "tools/call", {"name": "echo", "arguments": [1]}))
    assert bad_args["error"]["code"] == -32602
    assert (await server.handle(_req(9, "server/discover")))["error"]["code"] == -32601
    # prompts are not advertised, so neither method is served
    assert (await server.handle(_req(10, "prompts/list")))["error"]["code"] == -32601
    assert (await server.handle(_req(11, "prompts/get", {"name": "x"})))["error"]["code"] == -32601


async def test_serve_loop_cancellation_parse_errors_and_eof() -> None:
    server = AvoMcpServer(_registry())
    inbox: queue.Queue[str] = queue.Queue()
    written: list[dict] = []
    wrote = asyncio.Event()
    loop = asyncio.get_running_loop()

    def write(line: str) -> None:
        assert line.endswith("\n") and line.count("\n") == 1
        written.append(json.loads(line))
        loop.call_soon_threadsafe(wrote.set)

    async def next_reply() -> dict:
        while not written:
            wrote.clear()
            await asyncio.wait_for(wrote.wait(), 10)
        return written.pop(0)

    serving = asyncio.create_task(server.serve(inbox.get, write))
    inbox.put(json.dumps(_req(1, "initialize", {"protocolVersion": "2025-11-25"})) + "\n")
    assert (await next_reply())["id"] == 1
    inbox.put("not json at all\n")
    parse_error = await next_reply()
    assert parse_error["error"]["code"] == -32700 and parse_error["id"] is None
    inbox.put(json.dumps({"jsonrpc": "2.0", "id": [1], "method": "ping"}) + "\n")
    bad_id = await next_reply()
    assert bad_id["error"]["code"] == -32600 and bad_id["id"] is None
    inbox.put(json.dumps({"jsonrpc": "2.0", "id": 9}) + "\n")  # no method, no result
    assert (await next_reply())["error"]["code"] == -32600
    inbox.put(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": {"x": 1}},
            }
        )
        + "\n"
    )  # ignored
    inbox.put(json.dumps(_req(2, "tools/call", {"name": "slow"})) + "\n")
    inbox.put(json.dumps(_req(3, "ping")) + "\n")  # answered while slow runs
    assert (await next_reply())["id"] == 3
    inbox.put(
        json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        )
        + "\n"
    )
    inbox.put(json.dumps(_req(4, "ping")) + "\n")
    assert (await next_reply())["id"] == 4
    inbox.put("")  # end of input
    await asyncio.wait_for(serving, 10)
    assert written == []  # the cancelled call got no answer


async def test_resources(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "bin.dat").write_bytes(b"\xff\x00\xfe")
    (tmp_path / "many").mkdir()
    for i in range(RESOURCE_LIMIT + 10):
        (tmp_path / "many" / f"f{i:04d}.txt").write_text(str(i))
    (tmp_path / "link").symlink_to("/etc")
    server = AvoMcpServer(_registry(), workspace_root=tmp_path)
    await _initialized(server)
    listed = (await server.handle(_req(2, "resources/list")))["result"]["resources"]
    assert len(listed) == RESOURCE_LIMIT
    assert listed[0]["uri"] == "avo://workspace/a.txt"
    assert all(r["uri"].startswith("avo://workspace/") for r in listed)
    read = await server.handle(_req(3, "resources/read", {"uri": "avo://workspace/a.txt"}))
    assert read["result"]["contents"][0]["text"] == "alpha"
    blob = await server.handle(_req(4, "resources/read", {"uri": "avo://workspace/bin.dat"}))
    assert blob["result"]["contents"][0]["blob"] == "/wD+"
    for uri, code in [
        ("avo://workspace/link/passwd", -32602),
        ("avo://workspace/%2e%2e/x", -32602),
        ("file:///etc/passwd", -32602),
        ("avo://workspace/missing.txt", -32002),
    ]:
        answer = await server.handle(_req(5, "resources/read", {"uri": uri}))
        assert answer["error"]["code"] == code, uri
    no_ws = AvoMcpServer(_registry())
    await _initialized(no_ws)
    assert (await no_ws.handle(_req(2, "resources/list")))["result"] == {"resources": []}


async def test_serve_stops_when_the_client_is_gone() -> None:
    server = AvoMcpServer(_registry())
    lines = iter([json.dumps(_req(1, "ping")) + "\n", json.dumps(_req(2, "ping")) + "\n"])
    reads: list[str] = []

    def read() -> str:
        line = next(lines, "")
        reads.append(line)
        return line

    def broken(_: str) -> None:
        raise BrokenPipeError("client went away")

    await asyncio.wait_for(server.serve(read, broken), 10)
    assert len(reads) <= 2  # stopped after the failed write instead of reading on


async def test_stray_stdout_writes_do_not_reach_the_wire(assert_reaped) -> None:
    script = (
        "import subprocess\n"
        "from pydantic import BaseModel\n"
        "from avo.tools import FunctionTool, ToolRegistry\n"
        "from avo_mcp import serve_stdio\n"
        "class A(BaseModel):\n"
        "    pass\n"
        "def noisy(_):\n"
        "    print('print() noise')\n"
        "    subprocess.run(['echo', 'child process noise'], check=True)\n"
        "    return 'quiet result'\n"
        "print('banner before serving')\n"
        "serve_stdio(ToolRegistry([FunctionTool(name='noisy', description='Prints.',\n"
        "    arguments_model=A, function=noisy)]))\n"
    )
    server = MCPServer(command=[sys.executable, "-c", script])
    with pytest.raises(MCPError, match=r"wrote invalid output on stdout.*banner before serving"):
        await server.start()  # a banner before serve_stdio is the program's own bug...
    assert_reaped(server.pid)
    quiet = MCPServer(command=[sys.executable, "-c", script.replace("print('banner", "('banner")])
    async with MCPClient(quiet) as client:
        (tool,) = client.tools()
        assert await tool.invoke({}) == "quiet result"  # ...noise while serving is not
        assert "print() noise" in quiet.stderr_tail
        assert "child process noise" in quiet.stderr_tail
    assert_reaped(quiet.pid)


def test_a_line_too_long_is_dropped_unread_over_stdio(tmp_path: Path) -> None:
    """``avo serve-mcp`` over stdio never holds more than one message's worth of a line:
    a longer one is read to its end and dropped with a parse error, and serving goes on."""
    from avo_mcp.framing import MAX_MESSAGE_BYTES

    ping = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode() + b"\n"
    done = subprocess.run(
        [sys.executable, "-m", "avo_mcp", "serve-mcp", "--workspace-root", str(tmp_path)],
        input=b"x" * (MAX_MESSAGE_BYTES + 1024 * 1024) + b"\n" + ping,
        capture_output=True,
        timeout=120,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert replies[0]["error"]["code"] == -32700
    assert f"message exceeds {MAX_MESSAGE_BYTES} bytes" in replies[0]["error"]["message"]
    assert replies[1] == {"jsonrpc": "2.0", "id": 7, "result": {}}
