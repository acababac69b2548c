"""FunctionTool, ToolRegistry, schema helpers, fingerprints."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from avo import (
    FunctionTool,
    ToolCall,
    ToolRegistry,
    to_anthropic_tool,
    to_json_schema,
    to_openai_function,
)
from avo.exceptions import (
    DuplicateToolError,
    ToolAlreadyCompletedError,
    ToolNotFoundError,
)
from avo.models import ToolRisk
from avo.tools import Tool, canonical_fingerprint, tool_call_fingerprint


class Inner(BaseModel):
    value: int


class Args(BaseModel):
    name: str
    inner: Inner | None = None


def make(function: Any, name: str = "greet") -> FunctionTool[Args]:
    return FunctionTool(name=name, description="Greets.", arguments_model=Args, function=function)


def test_schema_forbids_additional_properties_on_every_object() -> None:
    schema = to_json_schema(Args)
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Inner"]["additionalProperties"] is False  # type: ignore[index]
    openai = to_openai_function("greet", "Greets.", Args)
    assert openai["type"] == "function" and openai["function"]["strict"] is True
    # strict mode: every property required (an optional one stays nullable), no defaults
    strict = openai["function"]["parameters"]
    assert strict["required"] == ["name", "inner"]
    assert "default" not in strict["properties"]["inner"]
    assert {k: v for k, v in strict.items() if k not in ("required", "properties")} == {
        k: v for k, v in schema.items() if k not in ("required", "properties")
    }
    assert to_anthropic_tool("greet", "Greets.", Args) == {
        "name": "greet",
        "description": "Greets.",
        "input_schema": schema,
    }


def test_function_tool_metadata_and_protocol() -> None:
    tool = make(lambda a: {"hi": a.name})
    assert isinstance(tool, Tool)
    assert tool.metadata.name == "greet" and tool.metadata.risk is None
    assert tool.metadata.effective_risk is ToolRisk.EXECUTE
    safe = FunctionTool(
        name="look",
        description="d",
        arguments_model=Args,
        function=lambda a: 1,
        risk=ToolRisk.INSPECT,
    )
    assert safe.metadata.effective_risk is ToolRisk.INSPECT
    with pytest.raises(TypeError, match="pydantic BaseModel"):
        FunctionTool(
            name="x",
            description="d",
            arguments_model=dict,  # type: ignore[type-var]
            function=lambda a: 1,
        )


async def test_invoke_success_sync_and_async() -> None:
    async def slow(args: Args) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"hi": args.name, "inner": args.inner}

    registry = ToolRegistry([make(slow)])
    result = await registry.invoke(
        ToolCall(name="greet", arguments={"name": "ada", "inner": {"value": 2}}),
        completed_tool_call_ids=set(),
    )
    assert result.success and result.output == {"hi": "ada", "inner": {"value": 2}}
    assert result.duration_ms >= 0 and result.finished_at >= result.started_at


async def test_invoke_failures_become_failed_results() -> None:
    def boom(args: Args) -> None:
        raise KeyError("missing")

    registry = ToolRegistry([make(boom)])
    failed = await registry.invoke(
        ToolCall(name="greet", arguments={"name": "x"}), completed_tool_call_ids=set()
    )
    assert not failed.success and failed.error == "Tool 'greet' raised KeyError: 'missing'"
    invalid = await registry.invoke(
        ToolCall(name="greet", arguments={"nom": "x"}), completed_tool_call_ids=set()
    )
    assert not invalid.success and "Invalid arguments for tool 'greet'" in (invalid.error or "")
    missing = await registry.invoke(ToolCall(name="nope"), completed_tool_call_ids=set())
    assert not missing.success and "Tool 'nope' is not registered" in (missing.error or "")


async def test_idempotency_guard_and_duplicates() -> None:
    registry = ToolRegistry([make(lambda a: 1)])
    call = ToolCall(name="greet", arguments={"name": "x"})
    with pytest.raises(ToolAlreadyCompletedError):
        await registry.invoke(call, completed_tool_call_ids={call.tool_call_id})
    with pytest.raises(DuplicateToolError, match="already registered"):
        registry.register(make(lambda a: 2))
    with pytest.raises(ToolNotFoundError):
        registry.get("other")
    assert [m.name for m in registry.metadata] == ["greet"] and "greet" in registry


def test_fingerprints_ignore_ids_and_key_order() -> None:
    a = ToolCall(name="t", arguments={"a": 1, "b": 2})
    b = ToolCall(name="t", arguments={"b": 2, "a": 1})
    assert tool_call_fingerprint(a) == tool_call_fingerprint(b)
    assert canonical_fingerprint({"x": [1, 2]}) != canonical_fingerprint({"x": [2, 1]})


@pytest.mark.parametrize(
    ("output", "named"),
    [({"a": {1, 2}}, "a is of type set"), ([1, object()], "1 is of type object"), (b"x", "bytes")],
)
async def test_output_that_is_not_json_becomes_a_failed_result(output: Any, named: str) -> None:
    from avo.models import ToolMetadata

    class Sloppy:
        metadata = ToolMetadata(name="sloppy", description="d", input_schema={"type": "object"})

        async def invoke(self, arguments: Any) -> Any:
            return output

    registry = ToolRegistry([Sloppy()])
    result = await registry.invoke(ToolCall(name="sloppy"), completed_tool_call_ids=set())
    assert not result.success and result.output is None
    assert result.error is not None
    assert "Tool 'sloppy' returned output that is not JSON data" in result.error
    assert named in result.error and "return dicts with string keys" in result.error
