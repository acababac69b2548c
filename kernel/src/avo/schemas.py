"""JSON schemas for tools and structured output: what the model is shown.

:func:`to_json_schema` turns a pydantic model into the schema a tool
advertises:

- a model (an object with ``properties``) admits no other keys
  (``additionalProperties: false``);
- ``dict[str, X]`` stays what it means, an object whose values are ``X``
  (``additionalProperties: X``), and ``dict[str, Any]`` an object with any keys;
- ``title`` keywords are dropped (they repeat the field names and cost tokens
  on every request) unless ``titles=True``; a property *named* ``title`` stays;
- a model that refers to itself keeps an object at the root (pydantic would
  give a bare ``$ref``, which vendors refuse as a tool's parameters).

:func:`to_strict_schema` makes the strict form OpenAI-style structured outputs
and strict tools require (every object closed, every property required, no
``default``), or says the schema has no strict form (None): an object of
arbitrary keys, a non-object root, or keywords strict mode refuses.

The walkers know JSON Schema's structure: they recurse into subschemas only
(``properties`` values, ``items``, ``anyOf`` members, ``$defs``, ...), so a
property called ``properties`` or ``title`` is never mistaken for a keyword.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, JsonValue

from avo.exceptions import AvoError

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
"""Keywords whose value maps names to subschemas."""
_SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "additionalItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
"""Keywords whose value is one subschema (or a boolean)."""
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
"""Keywords whose value is a list of subschemas."""

SUBSCHEMA_KEYS: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] = (
    _SCHEMA_MAPS,
    _SCHEMA_VALUES,
    _SCHEMA_LISTS,
)
"""(keywords mapping names to subschemas, keywords holding one, keywords holding a list)."""

_NOT_STRICT = frozenset(
    {
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
        "uniqueItems",
        "dependentSchemas",
        "if",
        "then",
        "else",
        "not",
    }
)
"""Keywords OpenAI's strict mode refuses."""


def walk(schema: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    """Call ``visit`` on every schema node of ``schema`` (parents before children)."""
    if not isinstance(schema, dict):
        return
    visit(schema)
    for key in _SCHEMA_MAPS:
        members = schema.get(key)
        if isinstance(members, dict):
            for sub in members.values():
                walk(sub, visit)
    for key in _SCHEMA_VALUES:
        walk(schema.get(key), visit)
    for key in _SCHEMA_LISTS:
        members = schema.get(key)
        if isinstance(members, list):
            for sub in members:
                walk(sub, visit)


def _close_models(node: dict[str, Any]) -> None:
    if "properties" in node:
        node["additionalProperties"] = False


def _drop_title(node: dict[str, Any]) -> None:
    node.pop("title", None)


def to_json_schema(model: type[BaseModel], *, titles: bool = False) -> dict[str, JsonValue]:
    """The JSON schema of ``model`` as a tool advertises it (see the module docstring)."""
    schema = model.model_json_schema(ref_template="#/$defs/{model}")
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and schema.keys() <= {"$ref", "$defs"}:
        # a model that refers to itself: pydantic puts the whole model in $defs;
        # vendors want an object at the root, so the root becomes the model again
        defs = schema["$defs"]
        assert isinstance(defs, dict)
        root = defs[ref.removeprefix("#/$defs/")]
        assert isinstance(root, dict)
        schema = {**root, "$defs": defs}
    walk(schema, _close_models)
    if not titles:
        walk(schema, _drop_title)
    return schema


class _NoStrictForm(AvoError):
    """The schema has no strict form (never leaves this module)."""


def _strict_node(node: dict[str, Any]) -> None:
    if _NOT_STRICT & node.keys():
        raise _NoStrictForm
    if "$ref" in node and len(node) > 1:  # strict mode allows no keywords beside a $ref
        ref = node["$ref"]
        node.clear()
        node["$ref"] = ref
        return
    node.pop("default", None)
    extra = node.get("additionalProperties")
    if extra is not None and extra is not False:
        raise _NoStrictForm  # dict[str, X]: keys the schema cannot list
    properties = node.get("properties")
    is_object = node.get("type") == "object" or isinstance(properties, dict)
    if is_object:
        if not isinstance(properties, dict):
            raise _NoStrictForm  # dict[str, Any]: an object of arbitrary keys
        node["additionalProperties"] = False
        node["required"] = list(properties)


def to_strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of ``schema`` in strict form, or None when it has none.

    Strict form: every object lists its properties, all required, and admits no
    others; no ``default``; a ``$ref`` stands alone. An object of arbitrary keys
    (``dict[str, X]``), a root that is not an object, or a keyword strict mode
    refuses (``patternProperties``, ``uniqueItems``, ...) has no strict form.
    """
    strict = copy.deepcopy(schema)
    if strict.get("type") != "object" or not isinstance(strict.get("properties"), dict):
        return None
    try:
        walk(strict, _strict_node)
    except _NoStrictForm:
        return None
    return strict


__all__ = ["SUBSCHEMA_KEYS", "to_json_schema", "to_strict_schema", "walk"]
