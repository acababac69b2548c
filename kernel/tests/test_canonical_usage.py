"""The canonical minimal usage, verbatim."""

from avo import (
    AgentRuntime,
    FakeProvider,
    FunctionTool,
    LoopPolicy,
    ModelResponse,
    ToolRegistry,
)


async def test_canonical_minimal_usage() -> None:
    provider = FakeProvider([ModelResponse(content="done")])
    runtime = AgentRuntime(provider=provider, tools=[], policy=LoopPolicy(max_steps=5))
    result = await runtime.run("say done")
    assert result.status.value == "completed"
    assert FunctionTool and ToolRegistry  # the imports of the canonical snippet resolve
