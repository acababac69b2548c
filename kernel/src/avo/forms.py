"""Answers that fill a form: a JSON-schema object of plain fields, as a tool asks for one.

A tool that needs a person's input mid-call (an MCP server's elicitation) may
say what shape the answer takes: an object whose properties are strings,
numbers, integers, booleans, or choices (``enum``, ``oneOf`` of ``const``, or
an array of such for several). :func:`form_content` reads a person's reply
against it: a JSON object, or a bare value for the form's one field (or its
one required field without a default). Missing
fields take the schema's ``default``; anything that does not fit raises
``ValueError`` with one line naming the field and what it takes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def fields(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The form's fields (name -> property schema), in the schema's order."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    return {str(k): dict(v) for k, v in properties.items() if isinstance(v, Mapping)}


def _items(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    items = spec.get("items")
    return items if isinstance(items, Mapping) else {}


def _choices(spec: Mapping[str, Any]) -> list[Any] | None:
    if isinstance(spec.get("enum"), list):
        return list(spec["enum"])
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list) and all(isinstance(o, Mapping) and "const" in o for o in options):
        return [o["const"] for o in options]
    return None


def _describe(spec: Mapping[str, Any]) -> str:
    choices = _choices(spec)
    if choices is not None:
        return "one of " + ", ".join(json.dumps(c) for c in choices)
    kind = spec.get("type", "a value")
    if kind == "array":
        items = _items(spec)
        inner = _choices(items) or []
        return "a list of " + (", ".join(json.dumps(c) for c in inner) or "values")
    return f"{'an' if str(kind)[:1] in 'aeiou' else 'a'} {kind}"


def _coerce_bare(spec: Mapping[str, Any], text: str) -> Any:
    """A one-field form's bare reply as that field's value (``42``, ``true``, ``a, b``)."""
    kind = spec.get("type")
    if kind in ("number", "integer", "boolean") or (kind == "array"):
        try:
            return json.loads(text)
        except ValueError:
            if kind == "array":
                return [part.strip() for part in text.split(",") if part.strip()]
            if kind == "boolean" and text.lower() in ("yes", "no", "y", "n"):
                return text.lower() in ("yes", "y")
            return text
    return text


def _outside(values: list[Any], allowed: list[Any] | None) -> bool:
    return allowed is not None and any(v not in allowed for v in values)


def _check(name: str, spec: Mapping[str, Any], value: Any) -> str | None:
    """Why ``value`` does not fit field ``name`` (None when it fits)."""
    wants = f"field {name!r} takes {_describe(spec)}"
    kind = spec.get("type")
    choices = _choices(spec)
    if kind == "array":
        items = _items(spec)
        inner = _choices(items)
        if not isinstance(value, list) or _outside(value, inner):
            return f"{wants}, got {json.dumps(value)}"
        low, high = spec.get("minItems"), spec.get("maxItems")
        if (isinstance(low, int) and len(value) < low) or (
            isinstance(high, int) and len(value) > high
        ):
            return f"{wants} ({low if low is not None else 0}-{high or 'any'} of them)"
        return None
    if choices is not None:
        return None if value in choices else f"{wants}, got {json.dumps(value)}"
    if kind == "boolean":
        return None if isinstance(value, bool) else f"{wants}, got {json.dumps(value)}"
    if kind in ("number", "integer"):
        number_ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not number_ok or (kind == "integer" and not float(value).is_integer()):
            return f"{wants}, got {json.dumps(value)}"
        low, high = spec.get("minimum"), spec.get("maximum")
        if (isinstance(low, int | float) and value < low) or (
            isinstance(high, int | float) and value > high
        ):
            return f"field {name!r} must be between {low} and {high}, got {value}"
        return None
    if kind == "string":
        if not isinstance(value, str):
            return f"{wants}, got {json.dumps(value)}"
        low, high = spec.get("minLength"), spec.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            return f"field {name!r} needs at least {low} characters"
        if isinstance(high, int) and len(value) > high:
            return f"field {name!r} takes at most {high} characters"
        form = spec.get("format")
        if (form == "email" and not _EMAIL.match(value)) or (
            form == "date" and not _DATE.match(value)
        ):
            return f"field {name!r} takes a {form}, got {value!r}"
        if form == "uri" and ":" not in value:
            return f"field {name!r} takes a URI, got {value!r}"
    return None


def form_content(schema: Mapping[str, Any], text: str) -> dict[str, JsonValue]:
    """A person's reply as the form's content (defaults filled in); ValueError if it won't fit."""
    spec = fields(schema)
    stripped = text.strip()
    parsed: Any
    try:
        parsed = json.loads(stripped) if stripped.startswith("{") else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc.msg}); give a JSON object") from None
    if parsed is None:  # a bare value fills the one field (or the one required without default)
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        open_fields = [n for n in spec if n in (required or []) and "default" not in spec[n]]
        target = list(spec) if len(spec) == 1 else open_fields
        if len(target) != 1:
            names = ", ".join(spec) or "no fields"
            raise ValueError(f"the answer must be a JSON object with the fields {names}")
        parsed = {target[0]: _coerce_bare(spec[target[0]], stripped)} if stripped else {}
    content: dict[str, JsonValue] = {}
    for key, value in parsed.items():
        if key not in spec:
            raise ValueError(f"the form has no field {key!r} (fields: {', '.join(spec)})")
        content[key] = value
    for name, field in spec.items():
        if name not in content and "default" in field:
            content[name] = field["default"]
    required = schema.get("required")
    for name in required if isinstance(required, list) else ():
        if name not in content:
            raise ValueError(f"field {name!r} is required ({_describe(spec.get(name, {}))})")
    for name, value in content.items():
        problem = _check(name, spec[name], value)
        if problem:
            raise ValueError(problem)
    return content


def describe_form(schema: Mapping[str, Any]) -> str:
    """One line listing the fields: ``name (a string, required), age (an integer)``."""
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    parts = []
    for name, spec in fields(schema).items():
        notes = [_describe(spec)]
        if name in (required or []):
            notes.append("required")
        if "default" in spec:
            notes.append(f"default {json.dumps(spec['default'])}")
        parts.append(f"{name} ({', '.join(notes)})")
    return ", ".join(parts)


__all__ = ["describe_form", "fields", "form_content"]
