"""avo runs using MCP servers nobody here wrote, installed by the test setup.

- ``@modelcontextprotocol/server-everything`` (npm, pinned in tests/interop/
  package-lock.json, installed by scripts/ensure-mcp-interop.sh) over stdio and
  over streamable HTTP (which opens every event stream with a priming event);
- ``mcp-server-time`` (PyPI, pinned in avo-mcp's ``test`` extra) over stdio.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path

from avo import AgentRuntime, FakeProvider, ModelResponse, ToolCall
from avo.events import EventType
from avo_mcp import MCPClient, MCPHttpServer, MCPServer
from avo_mcp.features import ClientFeatures, ProgressUpdate, ProviderSampler


def _calls(*steps: tuple[str, dict] | str) -> list[ModelResponse]:
    return [
        ModelResponse(content=step)
        if isinstance(step, str)
        else ModelResponse(tool_call=ToolCall(name=step[0], arguments=step[1]))
        for step in steps
    ]


def _tool_messages(provider: FakeProvider) -> list[str]:
    last = provider.requests[-1].messages
    return [str(m["content"]) for m in last if m.get("role") == "tool"]


async def _wait_for_tool(server, name: str) -> None:
    # server-everything registers capability-dependent tools after the
    # handshake and announces them with tools/list_changed.
    for _ in range(100):
        if any(tool["name"] == name for tool in server.tools):
            return
        await asyncio.sleep(0.05)
    await server.refresh_tools()


async def test_server_everything_stdio_in_a_run(everything_js: Path, tmp_path, assert_reaped):
    updates: list[ProgressUpdate] = []
    steps = _calls(
        ("get-tiny-image", {}),
        ("trigger-long-running-operation", {"duration": 1, "steps": 2}),
        ("get-roots-list", {}),
        ("trigger-sampling-request", {"prompt": "name a colour", "maxTokens": 20}),
        "blue",  # the run's own provider answers the server's sampling request
        ("get-resource-links", {"count": 2}),
        ("read_resource", {"uri": "demo://resource/dynamic/text/2"}),
        "done",
    )
    provider = FakeProvider(steps)
    approved: list[str] = []

    def approve(call: ToolCall) -> bool:
        approved.append(call.name)
        return True

    features = ClientFeatures(
        roots=[tmp_path],
        sampling=ProviderSampler(provider, approval_callback=approve),
        on_progress=updates.append,
    )
    server = MCPServer(command=["node", str(everything_js), "stdio"], features=features)
    # named after the package, not after `node` or `index.js`
    assert server.name == "server-everything"
    async with MCPClient(server) as client:
        await _wait_for_tool(server, "trigger-sampling-request")
        runtime = AgentRuntime(provider=provider, tools=[], approval_callback=approve)
        client.attach(runtime.tools)
        result = await runtime.run("exercise server-everything")
        assert result.status.value == "completed", result.error
        image, progress, roots, sampled, links, resource = _tool_messages(provider)
        # the PNG reaches the (vision-capable) model as an image block, bytes intact
        blocks = next(
            m["content"] for m in provider.requests[-1].messages if m.get("role") == "tool"
        )
        shown = [block for block in blocks if block["type"] == "image"]
        assert shown[0]["media_type"] == "image/png", image
        assert base64.b64decode(shown[0]["data"]).startswith(b"\x89PNG")
        assert "Long running operation completed" in progress
        assert [(u.progress, u.total) for u in updates] == [(1, 2), (2, 2)]
        assert tmp_path.resolve().as_uri() in roots
        assert "blue" in sampled
        assert "mcp_sampling" in approved
        assert "[resource link: demo://resource/dynamic/text/2" in links
        assert "Resource 2" in resource
        events = await runtime.event_store.get_events(result.run_id)
        completed = [e for e in events if e.event_type is EventType.TOOL_COMPLETED]
        assert len(completed) == 6
    assert_reaped(server.pid)


async def test_server_everything_streamable_http_in_a_run(everything_http_url: str) -> None:
    updates: list[ProgressUpdate] = []
    server = MCPHttpServer(
        url=everything_http_url,
        name="everything",
        features=ClientFeatures(on_progress=updates.append),
    )
    provider = FakeProvider(
        _calls(
            ("echo", {"message": "hello over streamable HTTP"}),
            ("get-structured-content", {"location": "Chicago"}),
            ("trigger-long-running-operation", {"duration": 1, "steps": 2}),
            ("get-sum", {"a": 2, "b": 40}),
            "done",
        )
    )
    async with MCPClient(server) as client:
        assert server.session_id is not None  # stateful: answers come on event streams
        runtime = AgentRuntime(provider=provider, tools=client.tools())
        result = await runtime.run("exercise server-everything over HTTP")
        assert result.status.value == "completed", result.error
        echo, structured, progress, total = _tool_messages(provider)
        assert echo == "Echo: hello over streamable HTTP"
        # the text once, not text + structuredContent + text again
        assert structured.count('"temperature"') == 1
        assert set(json.loads(structured)) >= {"temperature", "conditions"}
        assert "Long running operation completed" in progress
        assert [(u.progress, u.total) for u in updates] == [(1, 2), (2, 2)]
        assert "42" in total


async def test_mcp_server_time_from_pypi_in_a_run(assert_reaped) -> None:
    server = MCPServer(command=[sys.executable, "-m", "mcp_server_time"])
    assert server.name == "mcp_server_time"
    provider = FakeProvider(
        _calls(
            (
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            ),
            ("get_current_time", {"timezone": "Europe/Paris"}),
            "done",
        )
    )
    async with MCPClient(server) as client:
        runtime = AgentRuntime(provider=provider, tools=client.tools())
        result = await runtime.run("what time is it in Tokyo when it is noon UTC?")
        assert result.status.value == "completed", result.error
        converted, now = _tool_messages(provider)
        assert json.loads(converted)["target"]["datetime"].endswith("T21:00:00+09:00")
        assert json.loads(now)["timezone"] == "Europe/Paris"
    assert_reaped(server.pid)
