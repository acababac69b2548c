"""A tool's form (an MCP server's elicitation) answered in a real browser, field by field.

``avo run`` pauses at the SDK server's ``book_table``, which asks for a date
and a number of seats. The run page shows the server's question and one
labelled input per field (required marked, the default filled in, the
field's description as a hint), not the call's raw arguments. Answers that
do not fit are refused with the same one-line error ``avo runs answer``
gives (what was typed stays in the fields); a fitting one continues the run
and the server books once.
Screenshots: ``form.png`` (as asked), ``form-refused.png``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from ui_kit import Server, Workspace

CONFIG = """
[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {{name = "sdk__book_table", arguments = {{place = "Ito"}}}}

[[provider.settings.script]]
content = "booked it"

[permission]
mode = "bypass_permissions"

[store]
location = "runs.db"

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
env = {{SDK_BOOKINGS = "{bookings}"}}
"""


def _cli_error(workspace: Workspace, run_id: str, call_id: str, text: str) -> str:
    """What ``avo runs answer`` says about ``text`` (one line, after ``avo: ``)."""
    done = workspace.avo("runs", "answer", run_id, call_id, text, check=False)
    assert done.returncode != 0, done.stdout
    line = done.stderr.strip().splitlines()[-1]
    return line.removeprefix("avo: ").removeprefix("error: ")


def test_a_tool_form_is_answered_field_by_field(
    workspace: Workspace, chromium: Any, shots: Path
) -> None:
    server_py = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "sdk_server.py"
    bookings = workspace.root / "bookings.txt"
    config = CONFIG.format(command=json.dumps([sys.executable, str(server_py)]), bookings=bookings)
    (workspace.root / "form.toml").write_text(config, encoding="utf-8")
    done = workspace.avo("run", "-c", "form.toml", "book a table", check=False)
    assert done.returncode == 3, done.stderr  # paused: the server asked a person
    (run,) = workspace.runs()
    run_id = run["run_id"]
    server = Server(workspace, "-c", "form.toml")
    page = chromium.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{server.url}/runs/{run_id}")
        card = page.locator(".item.k-ask")
        assert "Which day should I book Ito?" in card.locator("pre.text").inner_text()
        assert card.locator("pre.args").count() == 0  # the form, not the call's arguments
        assert card.locator("input[name=text]").count() == 0  # no free-text "tool's result"
        date = card.locator(".field[data-field=date]")
        seats = card.locator(".field[data-field=seats]")
        assert date.locator(".req").count() == 1  # required, marked
        assert seats.locator(".req").count() == 0
        assert "How many people" in seats.inner_text()  # the field's description
        assert "YYYY-MM-DD" in date.inner_text()
        assert seats.locator("input").get_attribute("type") == "number"
        assert seats.locator("input").input_value() == "2"  # the default, filled in
        assert card.locator("button.deny", has_text="Decline").count() == 1
        page.screenshot(path=str(shots / "form.png"), full_page=True, animations="disabled")
        call_id = card.locator("input[name=call_id]").input_value()

        # nothing typed for the required date: refused with the CLI's words
        page.click("form.decide button.approve")
        page.wait_for_selector(".notice.error")
        said = page.locator(".notice.error").inner_text().strip()
        assert said == _cli_error(workspace, run_id, call_id, '{"seats": 2}'), said
        assert "field 'date' is required" in said

        # seats out of range: refused, again as the CLI says it
        page.fill(".field[data-field=date] input", "2026-05-01")
        page.fill(".field[data-field=seats] input", "40")
        page.click("form.decide button.approve")
        page.wait_for_selector(".notice.error:has-text('seats')")
        said = page.locator(".notice.error").inner_text().strip()
        cli_said = _cli_error(workspace, run_id, call_id, '{"date": "2026-05-01", "seats": 40}')
        assert said == cli_said and "between 1 and 9" in said, said
        page.screenshot(path=str(shots / "form-refused.png"), full_page=True, animations="disabled")
        assert not bookings.exists()  # nothing was recorded, nothing booked

        # the refused values are shown again: only the field the error names needs fixing
        assert page.locator(".field[data-field=date] input").input_value() == "2026-05-01"
        assert page.locator(".field[data-field=seats] input").input_value() == "40"
        page.fill(".field[data-field=seats] input", "3")
        page.click("form.decide button.approve")
        page.wait_for_selector(".item.k-end:has-text('run completed')")
        deadline = time.monotonic() + 60
        while workspace.runs()[0]["state"] != "completed" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert bookings.read_text() == "Ito on 2026-05-01 for 3\n"  # booked once
        answered = page.locator(".item.k-answer").inner_text()
        assert '"date": "2026-05-01"' in answered and '"seats": 3' in answered
    finally:
        page.close()
        server.close()


QUESTION = """
tools = ["ask_user"]

[provider]
name = "fake"

[[provider.settings.script]]
tool_call.name = "ask_user"
tool_call.arguments = {question = "Which file then?"}

[[provider.settings.script]]
content = "I will use the file you chose."

[store]
location = "runs.db"
"""


def test_a_question_answered_from_a_shell_closes_its_form_on_the_open_page(
    workspace: Workspace, chromium: Any
) -> None:
    (workspace.root / "question.toml").write_text(QUESTION, encoding="utf-8")
    done = workspace.avo("run", "-c", "question.toml", "pick a file", check=False)
    assert done.returncode == 3, done.stderr
    (run,) = workspace.runs()
    server = Server(workspace, "-c", "question.toml")
    page = chromium.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{server.url}/runs/{run['run_id']}")
        card = page.locator(".item.k-ask")
        placeholder = card.locator("input[name=text]").get_attribute("placeholder")
        assert placeholder == "your answer (the tool's result)"  # a plain question: a text box
        call_id = card.locator("input[name=call_id]").input_value()
        answered = workspace.avo("runs", "answer", run["run_id"], call_id, "todo.md", "--by", "bob")
        assert answered.returncode == 0, answered.stderr
        page.wait_for_selector(".item.k-ask .answered-note")  # over the live stream, no reload
        assert card.locator("form.decide").count() == 0
        note = card.locator(".answered-note").inner_text()
        assert note.startswith("already answered by bob via cli"), note
    finally:
        page.close()
        server.close()


SAMPLING = """
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "sdk__summarize", arguments = {{text = "a very long story"}}}}
[[provider.settings.script]]
content = "a short story"
[[provider.settings.script]]
content = "summarized"

[store]
location = "runs.db"

[permission]
mode = "bypass_permissions"
[[permission.ask]]
tool = "mcp_sampling"
reason = "servers use the model only when a person allows it"

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
"""


def test_a_yes_or_no_question_needs_an_explicit_answer(
    workspace: Workspace, chromium: Any, shots: Path
) -> None:
    """An MCP server's sampling request a person must allow: a required yes/no field is two
    choices, neither picked; answering without one is refused as `avo runs answer` refuses
    it, "yes" lets the server's request run on the run's model."""
    server_py = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "sdk_server.py"
    config = SAMPLING.format(command=json.dumps([sys.executable, str(server_py)]))
    (workspace.root / "sampling.toml").write_text(config, encoding="utf-8")
    done = workspace.avo("run", "-c", "sampling.toml", "summarize", check=False)
    assert done.returncode == 3, done.stderr
    (run,) = workspace.runs()
    run_id = run["run_id"]
    server = Server(workspace, "-c", "sampling.toml")
    page = chromium.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{server.url}/runs/{run_id}")
        card = page.locator(".item.k-ask")
        allow = card.locator(".field[data-field=allow]")
        assert allow.locator("input[type=radio]").count() == 2
        assert allow.locator("input[type=radio]:checked").count() == 0  # no silent "no"
        assert allow.locator(".req").count() == 1
        page.screenshot(path=str(shots / "form-yes-no.png"), full_page=True, animations="disabled")
        call_id = card.locator("input[name=call_id]").input_value()
        page.click("form.decide button.approve")
        page.wait_for_selector(".notice.error")
        said = page.locator(".notice.error").inner_text().strip()
        assert said == _cli_error(workspace, run_id, call_id, "{}"), said
        assert "field 'allow' is required" in said
        page.check(".field[data-field=allow] input[value=true]")
        page.click("form.decide button.approve")
        page.wait_for_selector(".item.k-end:has-text('run completed')")
        assert "summarized" in page.locator("#timeline").inner_text()
    finally:
        page.close()
        server.close()
