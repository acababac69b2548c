"""Schemas that say what they mean: dict values, no titles, strict forms."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from avo import FunctionTool
from avo.schemas import to_json_schema, to_strict_schema
from avo.testing.tools import check_metadata


class Item(BaseModel):
    title: str  # a property named "title" is not a title keyword
    properties: list[str] = []  # nor is one named "properties" a keyword


class Args(BaseModel):
    counts: dict[str, int]
    items: dict[str, Item]
    anything: dict[str, Any] = {}
    mode: Literal["a", "b"] = "a"
    limit: int = Field(default=10, description="How many.")
    nested: Item | None = None


def test_dict_fields_advertise_their_values() -> None:
    schema = to_json_schema(Args)
    props: Any = schema["properties"]
    assert props["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["items"] == {"type": "object", "additionalProperties": {"$ref": "#/$defs/Item"}}
    assert props["anything"] == {"type": "object", "additionalProperties": True, "default": {}}
    assert schema["additionalProperties"] is False
    item: Any = schema["$defs"]
    assert item["Item"]["additionalProperties"] is False


def test_titles_are_dropped_unless_asked_for() -> None:
    schema = to_json_schema(Args)
    text = str(schema)
    assert "'title': 'Args'" not in text and "'title': 'Counts'" not in text
    item: Any = schema["$defs"]
    assert set(item["Item"]["properties"]) == {"title", "properties"}
    assert item["Item"]["properties"]["title"] == {"type": "string"}
    assert item["Item"]["properties"]["properties"]["items"] == {"type": "string"}
    assert "additionalProperties" not in item["Item"]["properties"]
    titled = to_json_schema(Args, titles=True)
    assert titled["title"] == "Args"
    tool = FunctionTool(
        name="t", description="d", arguments_model=Args, function=lambda a: 1, risk="inspect"
    )
    assert "title" not in tool.metadata.input_schema
    check_metadata(tool)  # the tool contract accepts dict-valued arguments
    kept = FunctionTool(
        name="t", description="d", arguments_model=Args, function=lambda a: 1, schema_titles=True
    )
    assert kept.metadata.input_schema["title"] == "Args"


class Plain(BaseModel):
    name: str
    limit: int = 5
    note: str | None = None
    inner: Item | None = Field(default=None, description="An item.")


def test_strict_form_requires_every_property_and_drops_defaults() -> None:
    schema = to_json_schema(Plain)
    strict = to_strict_schema(schema)
    assert strict is not None
    assert strict["required"] == ["name", "limit", "note", "inner"]
    assert "default" not in strict["properties"]["limit"]
    assert strict["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert strict["$defs"]["Item"]["required"] == ["title", "properties"]
    assert strict["additionalProperties"] is False
    assert "required" not in schema or schema["required"] == ["name"]  # the input is not changed


def test_no_strict_form_for_open_objects_or_refused_keywords() -> None:
    assert to_strict_schema(to_json_schema(Args)) is None  # dict[str, X]

    class Unique(BaseModel):
        tags: set[str]

    assert to_strict_schema(to_json_schema(Unique)) is None  # uniqueItems
    assert to_strict_schema({"type": "string"}) is None  # not an object root


class TreeNode(BaseModel):
    label: str
    children: list[TreeNode] = []


def test_a_model_that_refers_to_itself_keeps_an_object_at_the_root() -> None:
    schema = to_json_schema(TreeNode)
    assert schema["type"] == "object" and "$ref" not in schema
    assert schema["properties"]["children"] == {  # type: ignore[index]
        "type": "array",
        "items": {"$ref": "#/$defs/TreeNode"},
        "default": [],
    }
    assert schema["$defs"]["TreeNode"]["additionalProperties"] is False  # type: ignore[index]
    node = TreeNode.model_validate({"label": "a", "children": [{"label": "b"}]})
    assert node.children[0].label == "b"
