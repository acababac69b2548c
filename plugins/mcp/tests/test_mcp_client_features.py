"""What avo's client does with what real servers send: content, names, env, features."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from avo import AgentRuntime, FakeProvider, ModelResponse, ToolCall
from avo.exceptions import MCPError
from avo.tools import ToolRegistry
from avo_mcp import MCPClient, MCPServer, MCPToolbox
from avo_mcp.features import ClientFeatures, ProgressUpdate, ProviderSampler
from avo_mcp.naming import assign_tool_names, default_server_name

TESTS_DIR = Path(__file__).resolve().parent
FEATURES = [sys.executable, str(TESTS_DIR / "features_server.py")]


def _server(**kwargs) -> MCPServer:
    return MCPServer(command=FEATURES, name="features", **kwargs)


async def test_results_reach_the_model_once_with_images_as_content_blocks(assert_reaped) -> None:
    server = _server()
    async with MCPClient(server) as client:
        tools = {tool.metadata.name: tool for tool in client.tools()}
        output = await tools["media"].invoke({})
        # the image goes to the runtime as a content block (vision models see it)...
        assert output["type"] == "content_blocks"
        first, image = output["blocks"]
        assert (image["type"], image["media_type"], image["size"]) == ("image", "image/png", 68)
        # ...and the rest as text, each part once, other media as placeholders
        media = first["text"]
        assert media.count("here is a chart") == 1
        assert "[image: image/png" not in media
        assert "[audio: audio/wav, 40 bytes;" in media
        assert "[resource file:///notes.md]\n# Notes" in media  # embedded text resource
        assert '[resource file:///data.json]\n{"k": 1}' in media  # textual blob decoded
        assert "[binary resource file:///bin: application/zip, 4 bytes;" in media
        assert "[resource link: test://static/1 (Resource 1)]" in media
        assert "iVBORw0KGgo" not in media  # no base64 reaches the model
        # structuredContent is shown only when there is no text
        assert await tools["structured"].invoke({}) == '{"temperature": 21, "unit": "C"}'
        assert await tools["structured_only"].invoke({}) == '{"rows": [1, 2]}'
        # a 3 MB result is capped, with a note saying so
        big = await tools["big"].invoke({})
        assert len(big) < 51_000
        assert "avo truncated this MCP tool result: " in big
        assert f"of {3 * 1024 * 1024} characters cut here" in big
        # resources are offered to the model as tools
        assert await tools["read_resource"].invoke({"uri": "test://static/1"}) == (
            "[resource test://static/1]\nresource one"
        )
        assert "test://static/1  Resource 1 (text/plain)" in await tools["list_resources"].invoke(
            {}
        )
    assert_reaped(server.pid)


async def test_in_a_run_the_tool_message_is_the_text_alone() -> None:
    async with MCPClient(_server()) as client:
        provider = FakeProvider(
            [
                ModelResponse(tool_call=ToolCall(name="structured", arguments={})),
                ModelResponse(content="done"),
            ]
        )
        result = await AgentRuntime(provider=provider, tools=client.tools()).run("weather")
        assert result.status.value == "completed"
        assert provider.requests[1].messages[-1]["content"] == '{"temperature": 21, "unit": "C"}'


async def test_colliding_names_get_stable_suffixes_and_no_server_is_refused() -> None:
    async with MCPClient(_server()) as client:
        tools = client.tools()
        names = [tool.metadata.name for tool in tools]
        assert len(names) == len(set(names))
        by_remote = {
            tool.remote_name: tool.metadata.name for tool in tools if hasattr(tool, "remote_name")
        }
        assert by_remote["weather_get"] == "weather_get"  # already model-safe: kept
        assert by_remote["weather.get"].startswith("weather_get_")
        long_a, long_b = (by_remote["a" * 64 + suffix] for suffix in ("_first", "_second"))
        assert long_a != long_b and len(long_a) == len(long_b) == 64
        registry = ToolRegistry(tools)  # no DuplicateToolError
        called = await registry.invoke(
            ToolCall(name=by_remote["weather.get"]), completed_tool_call_ids=set()
        )
        assert called.output == "called weather.get"
    # the same names whatever order the server lists its tools in
    pairs = [(remote, remote) for remote in by_remote]
    assert assign_tool_names(pairs) == assign_tool_names(list(reversed(pairs)))


async def test_two_servers_offering_one_name_both_stay_usable() -> None:
    servers = [MCPServer(command=FEATURES, name=name) for name in ("one", "two")]
    async with MCPToolbox(servers) as toolbox:
        names = [tool.metadata.name for tool in toolbox.tools()]
        assert len(names) == len(set(names))
        assert "media" in names and any(n.startswith("media_") for n in names)


async def test_stdio_servers_get_a_minimal_environment() -> None:
    environ = {
        "HOME": "/home/someone",
        "PATH": "/usr/bin:/bin",
        "USER": "someone",
        "OPENAI_API_KEY": "sk-secret",
        "ANTHROPIC_API_KEY": "also-secret",
        "BASH_FUNC_x%%": "() { :; }",
        "SHELL": "() { exported function }",
    }
    server = _server(environ=environ, env={"MY_SETTING": "1"})
    async with MCPClient(server) as client:
        (env_tool,) = [tool for tool in client.tools() if tool.metadata.name == "env"]
        names = set(json.loads(await env_tool.invoke({})))
    # what the interpreter itself adds (e.g. LC_CTYPE) aside, only the basics + its own env
    assert {"HOME", "PATH", "USER", "MY_SETTING"} <= names
    assert not names & {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SHELL", "BASH_FUNC_x%%"}


async def test_progress_roots_and_sampling(tmp_path: Path) -> None:
    updates: list[ProgressUpdate] = []
    approvals: list[ToolCall] = []
    provider = FakeProvider([ModelResponse(content="sampled answer")])

    def approve(call: ToolCall) -> bool:
        approvals.append(call)
        return True

    features = ClientFeatures(
        roots=[tmp_path],
        sampling=ProviderSampler(provider, approval_callback=approve),
        on_progress=updates.append,
    )
    server = _server(features=features)
    async with MCPClient(server) as client:
        declared = json.loads(server.instructions or "{}")
        assert declared == {"roots": {"listChanged": False}, "sampling": {}}
        tools = {tool.metadata.name: tool for tool in client.tools()}
        assert (await tools["progress"].invoke({})).startswith("token avo-")
        assert [(u.progress, u.total, u.message) for u in updates] == [
            (1, 3, "step 1"),
            (2, 3, "step 2"),
            (3, 3, "step 3"),
        ]
        assert updates[0].describe() == "features/progress: 1/3 step 1"
        roots = json.loads(await tools["roots"].invoke({}))["result"]["roots"]
        assert roots == [{"uri": tmp_path.resolve().as_uri(), "name": tmp_path.name}]
        sampled = json.loads(await tools["sample"].invoke({"prompt": "say hi"}))["result"]
        assert sampled["content"] == {"type": "text", "text": "sampled answer"}
        assert sampled["role"] == "assistant"
        assert provider.requests[0].messages == [{"role": "user", "content": "say hi"}]
        assert approvals[0].name == "mcp_sampling"
        assert approvals[0].arguments["server"] == "features"


async def test_sampling_refused_without_approval_and_undeclared_features() -> None:
    provider = FakeProvider([ModelResponse(content="never")])
    features = ClientFeatures(sampling=ProviderSampler(provider, approval_callback=lambda c: False))
    async with MCPClient(_server(features=features)) as client:
        tools = {tool.metadata.name: tool for tool in client.tools()}
        refused = json.loads(await tools["sample"].invoke({}))
        assert "was not approved" in refused["error"]["message"]
        assert provider.requests == []
        # roots were not declared: the request is refused, never answered with a guess
        unrooted = json.loads(await tools["roots"].invoke({}))
        assert unrooted["error"]["code"] == -32601
    async with MCPClient(_server()) as client:
        assert json.loads(client.server.instructions or "null") == {}


async def test_elicitation_only_with_a_handler() -> None:
    from avo_mcp.features import ElicitationRequest

    asked: list[ElicitationRequest] = []

    async def answer(request: ElicitationRequest) -> dict:
        asked.append(request)
        return {"action": "accept", "content": request.defaults()}

    server = _server(features=ClientFeatures(elicitation=answer))
    async with MCPClient(server) as client:
        assert json.loads(server.instructions or "{}") == {"elicitation": {"form": {}}}
        (elicit,) = [tool for tool in client.tools() if tool.metadata.name == "elicit"]
        reply = json.loads(await elicit.invoke({}))
        assert reply["result"] == {"action": "accept", "content": {"city": "Paris"}}
        assert asked[0].message == "Which city?"
    async with MCPClient(_server()) as client:  # the default: not offered
        (elicit,) = [tool for tool in client.tools() if tool.metadata.name == "elicit"]
        assert json.loads(await elicit.invoke({}))["error"]["code"] == -32601


async def test_list_changed_refreshes_an_attached_registry() -> None:
    async with MCPClient(_server()) as client:
        runtime = AgentRuntime(provider=FakeProvider([]), tools=[])
        client.attach(runtime.tools)
        assert "added_later" not in runtime.tools
        await runtime.tools.get("change").invoke({})
        for _ in range(100):
            if "added_later" in runtime.tools:
                break
            await asyncio.sleep(0.05)
        assert "added_later" in runtime.tools
        assert runtime.tools.names().count("media") == 1
    async with MCPClient(_server()) as client:
        # a runtime built from client.tools() can be attached too: no duplicates
        runtime = AgentRuntime(provider=FakeProvider([]), tools=client.tools())
        before = runtime.tools.names()
        client.attach(runtime.tools)
        assert sorted(runtime.tools.names()) == sorted(before)


async def test_a_signal_kill_is_reported_as_a_signal(assert_reaped) -> None:
    server = _server()
    async with MCPClient(server) as client:
        (kill,) = [tool for tool in client.tools() if tool.metadata.name == "kill_self"]
        with pytest.raises(MCPError, match=r"was killed by signal SIGKILL \(9\)"):
            await kill.invoke({})
    assert_reaped(server.pid)


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31"], "server-everything"),
        (["uvx", "mcp-server-time", "--local-timezone", "UTC"], "mcp-server-time"),
        (["python", "-m", "avo_mcp.servers.git", "--repo", "."], "git"),
        (["node", "node_modules/@scope/weather/dist/index.js"], "weather"),
        (["docker", "run", "-i", "--rm", "mcp/fetch"], "fetch"),
        (["/opt/bin/my-server"], "my-server"),
    ],
)
def test_unnamed_servers_are_named_after_the_server_not_the_launcher(command, name) -> None:
    assert default_server_name(command) == name
    assert MCPServer(command=command).name == name
