"""A tool's question with a form (an MCP server's elicitation) as HTML fields, and back.

The run page shows one labelled input per field of the form's JSON schema
(text, number, date, e-mail, a box to tick or an explicit yes/no for a
required one, a pick list, or boxes to tick for several choices), with
required fields marked and defaults filled in. What is posted back is
turned into the JSON object the kernel reads against the form
(:func:`avo.forms.form_content`, through ``avo.ops.answer``), so a misfit is
refused with the same one-line error ``avo runs answer`` gives.
Field ``x`` is posted as ``f.x``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from avo.forms import fields

PREFIX = "f."
_YES = {"true", "1", "yes", "on"}  # what a yes posts (a radio's value, or a ticked box's)
_NO = {"false", "0", "no"}
_FORMATS = {"email": "email", "date": "date", "uri": "url", "date-time": "datetime-local"}


@dataclass(frozen=True)
class FormField:
    """One input of a form as the run page draws it."""

    name: str
    label: str
    hint: str
    required: bool
    widget: str  # "input" | "checkbox" | "yesno" | "select" | "ticks"
    input_type: str = "text"  # for "input": text, number, email, date, url
    value: str = ""  # the default, as the input shows it
    choices: list[tuple[str, str, bool]] = field(default_factory=list)  # (value, label, chosen)
    step: str = ""
    low: str = ""
    high: str = ""

    @property
    def chosen(self) -> bool:
        """A choice is preselected (the field's default)."""
        return any(chosen for _, _, chosen in self.choices)

    @property
    def key(self) -> str:
        """The name the field is posted under."""
        return PREFIX + self.name


def _options(spec: Mapping[str, Any]) -> list[tuple[Any, str]] | None:
    """A field's choices as (value, label): ``enum`` (``enumNames``) or ``oneOf`` consts."""
    if isinstance(spec.get("enum"), list):
        names = spec.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(spec["enum"]) else None
        return [(v, str(labels[i]) if labels else str(v)) for i, v in enumerate(spec["enum"])]
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list) and all(isinstance(o, Mapping) and "const" in o for o in options):
        return [(o["const"], str(o.get("title") or o["const"])) for o in options]
    return None


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


def form_fields(schema: Mapping[str, Any]) -> list[FormField]:
    """The form's fields, in the schema's order."""
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    drawn = []
    for name, spec in fields(schema).items():
        kind = spec.get("type")
        default = spec.get("default")
        common: dict[str, Any] = {
            "name": name,
            "label": str(spec.get("title") or name),
            "hint": str(spec.get("description") or ""),
            "required": name in (required or []),
        }
        items = spec.get("items") if isinstance(spec.get("items"), Mapping) else {}
        choices = _options(items) if kind == "array" else _options(spec)
        if kind == "array" and choices is not None:
            picked = default if isinstance(default, list) else []
            ticks = [(json.dumps(v), label, v in picked) for v, label in choices]
            drawn.append(FormField(widget="ticks", choices=ticks, **common))
        elif choices is not None:
            options = [(json.dumps(v), label, v == default) for v, label in choices]
            drawn.append(FormField(widget="select", choices=options, **common))
        elif kind == "boolean" and common["required"] and "default" not in spec:
            drawn.append(FormField(widget="yesno", **common))  # an explicit yes or no
        elif kind == "boolean":
            drawn.append(FormField(widget="checkbox", value="1" if default else "", **common))
        elif kind in ("number", "integer"):
            number = {
                "step": "1" if kind == "integer" else "any",
                "low": _text(spec.get("minimum")),
                "high": _text(spec.get("maximum")),
            }
            drawn.append(
                FormField(
                    widget="input", input_type="number", value=_text(default), **number, **common
                )
            )
        else:
            kind_of = _FORMATS.get(str(spec.get("format")), "text")
            drawn.append(
                FormField(widget="input", input_type=kind_of, value=_text(default), **common)
            )
    return drawn


def refill(drawn: list[FormField], given: str) -> list[FormField]:
    """``drawn`` showing what was posted (``given``: the JSON object a refused answer was),
    so a person fixes the field the error names instead of typing the form again."""
    try:
        values = json.loads(given)
    except ValueError:
        return drawn
    if not isinstance(values, dict):
        return drawn
    refilled = []
    for spec in drawn:
        if spec.name not in values:
            refilled.append(replace(spec, value="") if spec.widget == "input" else spec)
            continue
        value = values[spec.name]
        if spec.widget == "checkbox":
            spec = replace(spec, value="1" if value is True else "")
        elif spec.widget == "yesno":
            spec = replace(spec, value=json.dumps(value) if isinstance(value, bool) else "")
        elif spec.widget in ("select", "ticks"):
            wanted = value if spec.widget == "ticks" and isinstance(value, list) else [value]
            texts = {json.dumps(v) for v in wanted}
            spec = replace(spec, choices=[(v, label, v in texts) for v, label, _ in spec.choices])
        else:
            spec = replace(spec, value=_text(value))
        refilled.append(spec)
    return refilled


def _number(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text  # the kernel says the field takes a number, naming what was typed
    return value if isinstance(value, int | float) and not isinstance(value, bool) else text


def _choice(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def answer_text(schema: Mapping[str, Any], posted: Any) -> str:
    """The JSON object a posted form (Starlette ``FormData``) stands for.

    An empty input is left out (the field's default applies, or the kernel
    says the field is required); an unticked box is false.
    """
    content: dict[str, Any] = {}
    for spec in form_fields(schema):
        if spec.widget == "ticks":
            picked = [_choice(v) for v in posted.getlist(spec.key)]
            if picked:
                content[spec.name] = picked
            continue
        if spec.widget == "checkbox":
            content[spec.name] = posted.get(spec.key) is not None
            continue
        if spec.widget == "yesno":
            said = str(posted.get(spec.key) or "").lower()
            if said in _YES or said in _NO:  # neither picked: left out (the kernel says required)
                content[spec.name] = said in _YES
            continue
        text = str(posted.get(spec.key) or "").strip()
        if not text:
            continue
        if spec.widget == "select":
            content[spec.name] = _choice(text)
        elif spec.input_type == "number":
            content[spec.name] = _number(text)
        else:
            content[spec.name] = text
    return json.dumps(content, ensure_ascii=False)


__all__ = ["PREFIX", "FormField", "answer_text", "form_fields", "refill"]
