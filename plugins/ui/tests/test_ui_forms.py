"""A form's fields as the run page draws them, and posted fields back to the JSON it takes.

What the fields post is read by the kernel against the schema
(``avo.forms.form_content``), as ``avo runs answer`` reads a typed reply.
"""

from __future__ import annotations

import json

import pytest
from starlette.datastructures import FormData

from avo.forms import form_content
from avo_ui.forms import answer_text, form_fields, refill

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "description": "as on the booking"},
        "email": {"type": "string", "format": "email"},
        "seats": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
        "terrace": {"type": "boolean", "default": True},
        "room": {"type": "string", "enum": ["main", "garden"], "enumNames": ["Main", "Garden"]},
        "diet": {
            "type": "array",
            "items": {"oneOf": [{"const": "veg", "title": "Vegetarian"}, {"const": "gf"}]},
        },
    },
    "required": ["name", "room"],
}


def test_each_field_gets_its_input_label_and_required_mark() -> None:
    drawn = {f.name: f for f in form_fields(SCHEMA)}
    assert list(drawn) == ["name", "email", "seats", "terrace", "room", "diet"]
    name = drawn["name"]
    assert (name.label, name.hint, name.required, name.input_type) == (
        "Your name",
        "as on the booking",
        True,
        "text",
    )
    assert drawn["email"].input_type == "email" and not drawn["email"].required
    seats = drawn["seats"]
    assert (seats.input_type, seats.step, seats.low, seats.high, seats.value) == (
        "number",
        "1",
        "1",
        "9",
        "2",
    )
    assert (drawn["terrace"].widget, drawn["terrace"].value) == ("checkbox", "1")
    assert drawn["room"].widget == "select"
    assert drawn["room"].choices == [('"main"', "Main", False), ('"garden"', "Garden", False)]
    assert drawn["diet"].widget == "ticks"
    assert [label for _, label, _ in drawn["diet"].choices] == ["Vegetarian", "gf"]


def _posted(*pairs: tuple[str, str]) -> FormData:
    return FormData(list(pairs))


def test_posted_fields_become_the_object_the_kernel_reads() -> None:
    posted = _posted(
        ("f.name", " Ana "),
        ("f.seats", "3"),
        ("f.room", '"garden"'),
        ("f.diet", '"veg"'),
        ("f.diet", '"gf"'),
    )  # terrace unticked, email empty
    text = answer_text(SCHEMA, posted)
    assert json.loads(text) == {
        "name": "Ana",
        "seats": 3,
        "terrace": False,
        "room": "garden",
        "diet": ["veg", "gf"],
    }
    assert form_content(SCHEMA, text)["seats"] == 3


@pytest.mark.parametrize(
    ("pairs", "error"),
    [
        ([("f.room", '"main"')], "field 'name' is required (a string)"),
        (
            [("f.name", "A"), ("f.room", '"main"'), ("f.seats", "ten")],
            "field 'seats' takes an integer",
        ),
        ([("f.name", "A"), ("f.room", '"main"'), ("f.seats", "12")], "between 1 and 9, got 12"),
        ([("f.name", "A"), ("f.room", '"main"'), ("f.email", "nope")], "takes a email"),
    ],
)
def test_a_misfit_gets_the_kernels_one_line_error(pairs: list[tuple[str, str]], error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("(", r"\(").replace(")", r"\)")):
        form_content(SCHEMA, answer_text(SCHEMA, _posted(*pairs)))


def test_a_refused_answer_is_shown_again_in_its_fields() -> None:
    given = json.dumps({"name": "Ana", "seats": 12, "terrace": False, "diet": ["gf"]})
    drawn = {f.name: f for f in refill(form_fields(SCHEMA), given)}
    assert (drawn["name"].value, drawn["seats"].value, drawn["terrace"].value) == ("Ana", "12", "")
    assert [chosen for _, _, chosen in drawn["diet"].choices] == [False, True]
    assert drawn["email"].value == ""
    assert refill(form_fields(SCHEMA), "not json") == form_fields(SCHEMA)


ALLOW = {
    "type": "object",
    "properties": {"allow": {"type": "boolean", "title": "Allow"}},
    "required": ["allow"],
}


def test_a_required_yes_or_no_is_asked_explicitly() -> None:
    """A required boolean without a default is two choices, neither picked: no answer is not
    a silent "no" (the kernel says the field is required, as for avo runs answer)."""
    [allow] = form_fields(ALLOW)
    assert (allow.widget, allow.value) == ("yesno", "")
    assert json.loads(answer_text(ALLOW, _posted(("f.allow", "true")))) == {"allow": True}
    assert json.loads(answer_text(ALLOW, _posted(("f.allow", "false")))) == {"allow": False}
    assert json.loads(answer_text(ALLOW, _posted(("f.allow", "1")))) == {"allow": True}  # a box
    with pytest.raises(ValueError, match="field 'allow' is required"):
        form_content(ALLOW, answer_text(ALLOW, _posted()))
    [again] = refill(form_fields(ALLOW), '{"allow": false}')
    assert again.value == "false"
