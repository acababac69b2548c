"""avo serve-mcp publishes each argument's kind (``x-avo-kind``) the tool declared.

An avo tool's schema loses the hint on its way to a model (ToolMetadata keeps
it as ``argument_kinds``); the MCP server puts it back in ``tools/list``, so
a client on the other side (avo's own reads it through ToolMetadata) reads the
same argument kinds and its permission rules can read the arguments.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from avo.models import ToolMetadata, ToolRisk
from avo.tools import FunctionTool, ToolRegistry, argument_hint
from avo_mcp import AvoMcpServer
from avo_mcp.server import with_kind_hints


class Patch(BaseModel):
    path: str = Field(json_schema_extra=argument_hint("path"))
    text: str


class EditArgs(BaseModel):
    target: str = Field(json_schema_extra=argument_hint("path"))
    urls: list[str] = Field(default_factory=list, json_schema_extra={"items": {}})
    patches: list[Patch] = Field(default_factory=list)


def _tool() -> FunctionTool[EditArgs]:
    return FunctionTool(
        name="edit",
        description="Edit files.",
        arguments_model=EditArgs,
        function=lambda a: "ok",
        risk=ToolRisk.MODIFY,
        argument_kinds={"urls[]": "url"},
    )


async def test_tools_list_carries_the_kinds_and_a_reader_gets_them_back() -> None:
    tool = _tool()
    kinds = dict(tool.metadata.argument_kinds)
    assert kinds.get("target") is not None and kinds.get("urls[]") is not None
    server = AvoMcpServer(ToolRegistry([tool]))
    init = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    await server.handle({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    listed = await server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    [published] = listed["result"]["tools"]
    schema = published["inputSchema"]
    assert schema["properties"]["target"]["x-avo-kind"] == "path"
    assert schema["properties"]["urls"]["items"]["x-avo-kind"] == "url"
    assert schema["$defs"]["Patch"]["properties"]["path"]["x-avo-kind"] == "path"
    read = ToolMetadata(name="edit", description="d", input_schema=schema)
    assert {k: v for k, v in read.argument_kinds.items() if k in kinds} == kinds
    assert "x-avo-kind" not in str(tool.metadata.input_schema)  # the model's copy stays clean


def test_no_kinds_means_the_same_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert with_kind_hints(schema, {}) is schema
    assert with_kind_hints(schema, {"missing[].x": "path"}) == schema  # not spelled out: no hint
