"""ToolMetadata.argument_kinds: declared on the tool, or read from ``x-avo-kind`` schema hints."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from avo.models import ArgumentKind, ToolMetadata
from avo.tools import FunctionTool, argument_hint


class Patch(BaseModel):
    path: str = Field(json_schema_extra=argument_hint("path"))
    text: str


class Args(BaseModel):
    patches: list[Patch]
    url: str = Field(json_schema_extra=argument_hint(ArgumentKind.URL))
    target: str | None = Field(default=None, json_schema_extra=argument_hint("path"))
    files: list[str] = Field(
        default_factory=list, json_schema_extra={"items": {"x-avo-kind": "path"}}
    )
    note: str = ""


def _tool(**kwargs: Any) -> FunctionTool[Args]:
    return FunctionTool(
        name="t", description="d", arguments_model=Args, function=lambda a: None, **kwargs
    )


def _contains_hint(node: Any) -> bool:
    if isinstance(node, dict):
        return "x-avo-kind" in node or any(_contains_hint(v) for v in node.values())
    if isinstance(node, list):
        return any(_contains_hint(v) for v in node)
    return False


def test_hints_become_argument_kinds_and_leave_the_schema() -> None:
    metadata = _tool().metadata
    assert metadata.argument_kinds == {
        "patches[].path": ArgumentKind.PATH,
        "url": ArgumentKind.URL,
        "target": ArgumentKind.PATH,
        "files[]": ArgumentKind.PATH,
    }
    assert not _contains_hint(metadata.input_schema)
    assert metadata.input_schema["properties"]["url"] == {"type": "string"}  # no title


def test_an_explicit_declaration_wins_over_a_hint() -> None:
    metadata = _tool(argument_kinds={"url": "text", "note": "text"}).metadata
    assert metadata.argument_kinds["url"] is ArgumentKind.TEXT
    assert metadata.argument_kinds["note"] is ArgumentKind.TEXT
    assert metadata.argument_kinds["patches[].path"] is ArgumentKind.PATH


def test_mcp_style_schema_hints_and_uri_format() -> None:
    schema = {
        "type": "object",
        "properties": {
            "file": {"type": "string", "x-avo-kind": "path"},
            "endpoint": {"type": "string", "format": "uri"},
            "cmd": {"type": "string", "x-avo-kind": "command"},
            "x-avo-kind": {"type": "string"},  # a property that happens to have this name
        },
    }
    metadata = ToolMetadata(name="remote", description="d", input_schema=schema)
    assert metadata.argument_kinds == {
        "file": ArgumentKind.PATH,
        "endpoint": ArgumentKind.URL,
        "cmd": ArgumentKind.COMMAND,
    }
    properties = metadata.input_schema["properties"]
    assert properties["file"] == {"type": "string"}
    assert "x-avo-kind" in properties  # the property named so is kept
    assert schema["properties"]["file"]["x-avo-kind"] == "path"  # the caller's dict untouched


def test_unknown_kind_is_a_clear_error() -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string", "x-avo-kind": "file"}}}
    with pytest.raises(ValidationError, match="property 'p' has x-avo-kind 'file'; use one of"):
        ToolMetadata(name="x", description="d", input_schema=schema)
    with pytest.raises(ValueError, match="'file' is not a valid ArgumentKind"):
        argument_hint("file")


def test_recursive_schemas_terminate() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "x-avo-kind": "path"},
                    "child": {"$ref": "#/$defs/Node"},
                },
            }
        },
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    metadata = ToolMetadata(name="tree", description="d", input_schema=schema)
    assert metadata.argument_kinds["root.path"] is ArgumentKind.PATH
    assert "root.child.path" not in metadata.argument_kinds  # a recursive $ref is read once
