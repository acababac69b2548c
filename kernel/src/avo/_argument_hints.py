"""Argument kinds declared in a tool's JSON input schema (internal).

A property may say what it holds with ``"x-avo-kind": "path" | "url" |
"command" | "text"``; ``"format": "uri"`` (or ``iri``, ``uri-reference``) on a
string counts as ``url``. Hints are read through ``$ref`` / ``$defs``, arrays
and ``anyOf``/``oneOf``/``allOf``, and named by a pointer: ``path``,
``paths[]`` (every item of a list), ``patches[].path`` (a field of every item);
a recursive ``$ref`` is followed once.
The hint keyword itself is removed from the schema the model is shown, because
some vendors refuse unknown schema keywords.
"""

from __future__ import annotations

import copy
from typing import Any

from avo.risk import ARGUMENT_KIND_HINT, ArgumentKind

_URL_FORMATS = frozenset({"uri", "iri", "uri-reference", "iri-reference", "url"})
_COMBINATORS = ("anyOf", "oneOf", "allOf")
_KINDS = {kind.value: kind for kind in ArgumentKind}


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def _join(pointer: str, name: str) -> str:
    return f"{pointer}.{name}" if pointer else name


def schema_argument_kinds(schema: dict[str, Any]) -> dict[str, ArgumentKind]:
    """The argument kinds ``schema`` declares, by pointer (see the module docstring).

    Raises ValueError naming the property when a hint is not a known kind.
    """
    found: dict[str, ArgumentKind] = {}

    def visit(node: Any, pointer: str, refs: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in refs:
            target = _resolve(schema, ref)
            if target is not None:
                visit(target, pointer, (*refs, ref))
        hint = node.get(ARGUMENT_KIND_HINT)
        if hint is not None and pointer:
            kind = _KINDS.get(hint) if isinstance(hint, str) else None
            if kind is None:
                choices = ", ".join(_KINDS)
                raise ValueError(
                    f"input schema property {pointer!r} has {ARGUMENT_KIND_HINT} {hint!r}; "
                    f"use one of: {choices}"
                )
            found.setdefault(pointer, kind)
        elif pointer and node.get("format") in _URL_FORMATS:
            found.setdefault(pointer, ArgumentKind.URL)
        properties = node.get("properties")
        if isinstance(properties, dict):
            for name, sub in properties.items():
                if isinstance(name, str):
                    visit(sub, _join(pointer, name), refs)
        items = node.get("items")
        if isinstance(items, dict):
            visit(items, f"{pointer}[]", refs)
        for key in _COMBINATORS:
            options = node.get(key)
            if isinstance(options, list):
                for option in options:
                    visit(option, pointer, refs)

    visit(schema, "", ())
    return found


def _has_hint(node: Any) -> bool:
    if isinstance(node, dict):
        return ARGUMENT_KIND_HINT in node or any(_has_hint(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_hint(v) for v in node)
    return False


def _strip(node: Any, *, names: bool = False) -> None:
    """Remove the hint keyword in place; the keys of a ``properties`` map are names, kept."""
    if isinstance(node, dict):
        if not names:
            node.pop(ARGUMENT_KIND_HINT, None)
        for key, value in node.items():
            _strip(value, names=not names and key in ("properties", "$defs", "definitions"))
    elif isinstance(node, list):
        for value in node:
            _strip(value)


def without_hints(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the hint keyword (the same object when it has none)."""
    if not _has_hint(schema):
        return schema
    stripped = copy.deepcopy(schema)
    _strip(stripped)
    return stripped


__all__ = ["schema_argument_kinds", "without_hints"]
