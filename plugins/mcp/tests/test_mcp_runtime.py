"""AgentRuntime runs that use MCP tools, including servers that misbehave."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from avo import AgentRuntime, FakeProvider, LoopPolicy, ModelResponse, ToolCall
from avo.events import EventType
from avo_mcp import MCPClient, MCPServer

TESTS_DIR = Path(__file__).resolve().parent


def _script(tool: str, arguments: dict | None = None) -> FakeProvider:
    return FakeProvider(
        [
            ModelResponse(tool_call=ToolCall(name=tool, arguments=arguments or {})),
            ModelResponse(content="done"),
        ]
    )


async def test_runtime_uses_sdk_server_tool(sdk_server_command, assert_reaped):
    server = MCPServer(command=sdk_server_command, name="sdk")
    async with MCPClient(server) as client:
        provider = _script("add", {"a": 20, "b": 22})
        runtime = AgentRuntime(provider=provider, tools=client.tools())
        result = await runtime.run("add 20 and 22")
        assert result.status.value == "completed"
        assert result.output == "done"
        # the model was offered the server's schema and saw the tool's answer
        offered = {tool.name: tool for tool in provider.requests[0].tools}
        assert offered["add"].input_schema["required"] == ["a", "b"]
        tool_message = provider.requests[1].messages[-1]
        assert tool_message["role"] == "tool"
        assert tool_message["content"] == "42"  # the text, once: not the JSON-RPC wrapper
        events = await runtime.event_store.get_events(result.run_id)
        assert EventType.TOOL_COMPLETED in [event.event_type for event in events]
    assert_reaped(server.pid)


FAILURES = [
    # (tool, server kwargs, expected error text); the SDK-written server's crash and
    # hang are covered in test_mcp_client_stdio and below, this server starts fast.
    ("boom", {}, "returned an error: the boom tool always fails"),
    ("crash", {}, "exited with code 3; stderr: crash tool: exiting now"),
    ("hang", {"timeout_seconds": 1.0}, "did not answer tools/call within 1 seconds"),
    ("garbage", {}, "wrote invalid output on stdout"),
]


@pytest.mark.parametrize(("tool", "kwargs", "expected"), FAILURES)
async def test_misbehaving_server_ends_in_failed_tool_result(tool, kwargs, expected, assert_reaped):
    command = [sys.executable, str(TESTS_DIR / "raw_server.py")]
    server = MCPServer(command=command, name="raw", **kwargs)
    async with MCPClient(server) as client:
        provider = _script(tool)
        runtime = AgentRuntime(provider=provider, tools=client.tools())
        result = await runtime.run(f"call {tool}")
        # not a hung or crashed run: the model got the failure and answered
        assert result.status.value == "completed"
        events = await runtime.event_store.get_events(result.run_id)
        failed = [e for e in events if e.event_type is EventType.TOOL_FAILED]
        assert len(failed) == 1
        assert expected in failed[0].payload["error"]
        tool_message = provider.requests[1].messages[-1]
        assert expected in json.loads(tool_message["content"])["error"]
    assert server.returncode is not None
    assert_reaped(server.pid)


async def test_runtime_tool_timeout_cancels_mcp_call(sdk_server_command, assert_reaped):
    # The runtime's own tool timeout fires first (the MCP per-call timeout is 90 s).
    server = MCPServer(command=sdk_server_command)
    async with MCPClient(server) as client:
        provider = _script("hang")
        runtime = AgentRuntime(
            provider=provider, tools=client.tools(), policy=LoopPolicy(tool_timeout_seconds=1)
        )
        result = await runtime.run("call hang")
        assert result.status.value == "completed"
        events = await runtime.event_store.get_events(result.run_id)
        (failed,) = [e for e in events if e.event_type is EventType.TOOL_FAILED]
        assert "exceeded the configured timeout of 1 seconds" in failed.payload["error"]
        # the connection is still usable after the cancelled call
        answer = await server.call_tool("add", {"a": 1, "b": 2})
        assert answer["text"] == "3"
    assert_reaped(server.pid)
