"""The tool contract checker: a tool package runs it on each of its tools.

::

    from avo.testing.tools import check_tool_contract, check_tool_spec

    async def test_my_tool_contract():
        await check_tool_contract(make_shout_tool(), valid_arguments={"text": "hi"})

    def test_my_entry_point():
        check_tool_spec(shout_spec)

It checks: the object satisfies the ``Tool`` protocol; metadata is valid (name
shape, non-empty description); the input schema is an object schema with
``additionalProperties: false`` on every object node (providers' strict modes
need it); the tool declares its risk class; ``invoke`` with valid arguments
returns plain JSON; ``invoke`` with invalid arguments raises
``ToolValidationError`` (never runs the function with bad input).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from avo.exceptions import AvoError, ToolValidationError
from avo.models import ToolMetadata
from avo.tools import Tool

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolContractError(AvoError, AssertionError):
    """A tool breaks the tool contract; the message names the tool and the rule."""


def _fail(name: str, message: str) -> ToolContractError:
    return ToolContractError(f"tool {name!r}: {message}")


def _model_nodes(node: Any, path: str = "$") -> list[tuple[str, dict[str, Any]]]:
    """Every schema node that lists ``properties`` (a model), with its path.

    Walks subschemas only, so a property named ``properties`` is not a node.
    """
    from avo.schemas import SUBSCHEMA_KEYS

    maps, values, lists = SUBSCHEMA_KEYS

    found: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(node, dict):
        return found
    if isinstance(node.get("properties"), dict):
        found.append((path, node))
    for key in maps:
        members = node.get(key)
        if isinstance(members, dict):
            for name, sub in members.items():
                found.extend(_model_nodes(sub, f"{path}.{key}.{name}"))
    for key in values:
        found.extend(_model_nodes(node.get(key), f"{path}.{key}"))
    for key in lists:
        members = node.get(key)
        if isinstance(members, list):
            for index, sub in enumerate(members):
                found.extend(_model_nodes(sub, f"{path}.{key}[{index}]"))
    return found


def check_metadata(tool: Any, *, require_risk: bool = True) -> ToolMetadata:
    """Check the Tool protocol, metadata, schema strictness and declared risk."""
    if not isinstance(tool, Tool):
        raise ToolContractError(
            f"{tool!r} does not satisfy avo.tools.Tool (needs .metadata and async .invoke)"
        )
    metadata = tool.metadata
    if not isinstance(metadata, ToolMetadata):
        raise ToolContractError(f"{tool!r}.metadata is {type(metadata).__name__}, not ToolMetadata")
    name = metadata.name
    if not _NAME.match(name):
        raise _fail(name, "name must match ^[A-Za-z0-9_-]{1,64}$ (providers reject others)")
    if not metadata.description.strip():
        raise _fail(name, "description is blank; tell the model what the tool does")
    schema = metadata.input_schema
    if schema.get("type") != "object":
        raise _fail(name, f"input_schema type must be 'object', got {schema.get('type')!r}")
    for path, node in _model_nodes(schema):
        if node.get("additionalProperties") is not False:
            raise _fail(
                name,
                f"input_schema object at {path} lists properties but lacks "
                "additionalProperties: false (build it with avo.tools.to_json_schema)",
            )
    if require_risk and metadata.risk is None:
        raise _fail(
            name,
            "declares no risk; pass risk=ToolRisk.INSPECT|MODIFY|EXECUTE "
            "(undeclared tools are treated as EXECUTE, the most cautious class)",
        )
    return metadata


async def check_tool_contract(
    tool: Any,
    *,
    valid_arguments: Mapping[str, Any],
    invalid_arguments: Mapping[str, Any] | None = None,
    require_risk: bool = True,
) -> Any:
    """Run every check; return the output of the valid invocation."""
    metadata = check_metadata(tool, require_risk=require_risk)
    name = metadata.name
    output = await tool.invoke(dict(valid_arguments))
    try:
        json.dumps(output, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _fail(name, f"invoke returned non-JSON output ({exc}): {output!r}") from None
    bad = (
        dict(invalid_arguments)
        if invalid_arguments is not None
        else {
            **dict(valid_arguments),
            "__avo_contract_unknown_argument__": 1,
        }
    )
    try:
        await tool.invoke(bad)
    except ToolValidationError:
        pass
    else:
        raise _fail(
            name, f"invoke accepted invalid arguments {bad!r}; expected ToolValidationError"
        )
    return output


def check_tool_spec(spec: Any, settings: Mapping[str, Any] | None = None) -> Any:
    """Build a ToolSpec's tool and check it matches the spec (name, risk, effect)."""
    tool = spec.factory(dict(settings or {}))
    metadata = check_metadata(tool)
    if metadata.name != spec.name:
        raise _fail(spec.name, f"factory built a tool named {metadata.name!r}")
    if metadata.risk != spec.risk:
        raise _fail(
            spec.name,
            f"ToolSpec.risk is {spec.risk.value!r} but the tool's metadata.risk is "
            f"{metadata.risk.value if metadata.risk else None!r}; declare the same risk on both",
        )
    effect = getattr(spec, "effect", None)
    if effect is not None and metadata.effective_effect != effect:
        raise _fail(
            spec.name,
            f"ToolSpec.effect is {effect.value!r} but the tool's metadata says "
            f"{metadata.effective_effect.value!r}; declare the same effect on both",
        )
    return tool


__all__ = ["ToolContractError", "check_metadata", "check_tool_contract", "check_tool_spec"]
