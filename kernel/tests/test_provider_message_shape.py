"""What a provider receives is what docs/providers.md says ("What a provider receives")."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from avo import AgentRuntime, FunctionTool, ModelResponse, ToolCall
from avo.models import ModelRequest, ToolRisk


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str


class Recording:
    """Asks for grep twice (the second call fails), then answers; keeps every request."""

    name = "recording"
    model = "recording-1"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if len(self.requests) == 1:
            return ModelResponse(
                tool_call=ToolCall(tool_call_id="call_1", name="grep", arguments={"pattern": "x"})
            )
        if len(self.requests) == 2:
            return ModelResponse(
                tool_call=ToolCall(tool_call_id="call_2", name="grep", arguments={})
            )
        return ModelResponse(content="It is in manager.py.")


async def test_the_documented_message_shape() -> None:
    grep = FunctionTool(
        name="grep",
        description="search",
        arguments_model=Args,
        function=lambda a: "manager.py:151: class PluginManager:",
        risk=ToolRisk.INSPECT,
    )
    provider = Recording()
    result = await AgentRuntime(provider=provider, tools=[grep]).run(
        "Find it.", system_prompt="Be careful."
    )
    assert result.output == "It is in manager.py."
    last = provider.requests[-1]
    assert (last.step, [t.name for t in last.tools]) == (3, ["grep"])
    messages: list[dict[str, Any]] = [dict(m) for m in last.messages]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert messages[0] == {"role": "system", "content": "Be careful."}
    assert messages[1] == {"role": "user", "content": "Find it."}
    call = messages[2]
    assert call["content"] is None
    [entry] = call["tool_calls"]
    minted = entry["id"]  # the kernel's own id; the vendor's rides along
    assert minted != "call_1"
    assert entry == {
        "id": minted,
        "type": "function",
        "vendor_id": "call_1",
        "function": {"name": "grep", "arguments": '{"pattern":"x"}'},
    }
    assert json.loads(entry["function"]["arguments"]) == {"pattern": "x"}
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": minted,
        "vendor_id": "call_1",
        "name": "grep",
        "content": "manager.py:151: class PluginManager:",
    }
    failed = json.loads(messages[5]["content"])
    assert list(failed) == ["error"] and "pattern" in failed["error"]
