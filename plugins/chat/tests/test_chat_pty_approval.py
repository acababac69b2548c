"""Approvals answered inline: the diff a write would make is shown, y approves it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from chat_kit import Place

CONFIG = """
tools = ["read_file", "write_file"]

[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {name = "read_file", arguments = {path = "notes.md"}}

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "notes.md", content = "alpha\\nBETA\\n"}}

[[provider.settings.script]]
content = "updated notes.md"

[store]
location = "chat.db"
"""


def test_an_approval_shows_the_diff_and_y_lets_the_call_run(place: Place) -> None:
    place.config(CONFIG)  # no [permission] table: mode default (modify tools ask)
    (place.workspace / "notes.md").write_text("alpha\nbeta\n")
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("capitalise beta")
    term.wait_for("✓ read_file")  # read-only: no question
    term.wait_for("approve write_file notes.md?")
    term.wait_for("approve? y / n")
    text = term.text()
    assert "-beta" in text and "+BETA" in text  # the diff against the file as it is
    assert (place.workspace / "notes.md").read_text() == "alpha\nbeta\n"  # nothing yet
    term.enter("y")
    term.wait_for("✓ write_file")
    term.wait_for("updated notes.md")
    assert (place.workspace / "notes.md").read_text() == "alpha\nBETA\n"
    term.ctrl("d")
    assert term.wait_exit() == 0


DENY_CONFIG = """
tools = ["write_file", "ask_user"]

[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "out.txt", content = "x\\n"}}

[[provider.settings.script]]
tool_call.name = "ask_user"
tool_call.arguments = {question = "Which file then?", choices = ["notes.md", "todo.md"]}

[[provider.settings.script]]
content = "I will use todo.md instead."

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "todo.md", content = "y\\n"}}

[[provider.settings.script]]
content = "wrote todo.md"

[store]
location = "chat.db"
"""


def test_a_refusal_with_a_reason_a_question_and_ctrl_c_at_an_approval(place: Place) -> None:
    place.config(DENY_CONFIG)
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("write the output")
    term.wait_for("approve write_file out.txt?")
    term.wait_for("approve? y / n")
    term.enter("not there, ask me where")  # a refusal whose reason the model reads
    term.wait_for("✗ write_file denied")
    term.wait_for("Which file then?")
    term.wait_for("2. todo.md")
    term.enter("2")  # a choice by its number
    term.wait_for("I will use todo.md instead.")
    assert not (place.workspace / "out.txt").exists()

    term.enter("go on")
    term.wait_for("approve write_file todo.md?")
    term.wait_for("approve? y / n")
    term.ctrl("c")  # no answer: the turn stays paused, durably
    term.wait_for("no answer: the turn stays paused")
    term.ctrl("d")
    assert term.wait_exit() == 0
    assert not (place.workspace / "todo.md").exists()
    waiting = [run for run in place.runs() if run["state"] == "paused"]
    assert len(waiting) == 1

    again = place.terminal("resume")  # asks again, in the new process
    again.wait_for("approve write_file todo.md?")
    again.wait_for("approve? y / n")
    again.enter("y")
    again.wait_for("wrote todo.md")
    again.ctrl("d")
    assert again.wait_exit() == 0
    assert (place.workspace / "todo.md").read_text() == "y\n"
    events = [run for run in place.runs() if run["state"] != "completed"]
    assert events == []


ALWAYS_CONFIG = """
tools = ["write_file"]

[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "a.txt", content = "a\\n"}}

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "b.txt", content = "b\\n"}}

[[provider.settings.script]]
content = "wrote both"

[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "c.txt", content = "c\\n"}}

[[provider.settings.script]]
content = "wrote c"

[store]
location = "chat.db"
"""


def test_always_allows_the_tool_for_the_rest_of_the_chat_until_forgotten(place: Place) -> None:
    place.config(ALWAYS_CONFIG)
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("write two files")
    term.wait_for("approve write_file a.txt?")
    term.wait_for("a (always)")
    term.enter("a")
    term.wait_for("write_file is allowed without asking until this chat ends")
    term.wait_for("write_file allowed: you said always")  # b.txt: not asked
    term.wait_for("wrote both")
    assert term.text().count("approve write_file") == 1
    assert (place.workspace / "b.txt").read_text() == "b\n"
    term.enter("/permissions")
    term.wait_for("allowed without asking in this chat (you said always): write_file")
    term.enter("/permissions forget")
    term.wait_for("every approval asks again (forgot: write_file)")
    term.enter("one more")
    term.wait_for("approve write_file c.txt?")  # asked again after forget
    term.enter("y")
    term.wait_for("wrote c")
    term.ctrl("d")
    assert term.wait_exit() == 0
    first = min(place.runs(), key=lambda run: str(run["created_at"]))
    trace = subprocess.run(
        [sys.executable, "-m", "avo.cli", "runs", "inspect", "--json", str(first["run_id"])],
        cwd=place.workspace,
        env=place.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    answers = [
        event["payload"]
        for event in json.loads(trace)["events"]
        if event["event_type"] == "human_input_received"
    ]
    assert [a["reason"] for a in answers] == ["always allowed in this chat"] * 2  # a.txt, b.txt


MCP_CONFIG = """
[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {{name = "sdk__book_table", arguments = {{place = "Ito"}}}}

[[provider.settings.script]]
content = "booked it"

[permission]
mode = "bypass_permissions"

[store]
location = "chat.db"

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
env = {{SDK_BOOKINGS = "{bookings}"}}
"""


def test_an_mcp_servers_form_is_answered_in_the_chat(place: Place) -> None:
    """An MCP server's elicitation is the run's question: the chat shows its fields,
    says what does not fit, and the call runs again with the answer (one booking)."""
    from pathlib import Path

    server = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "sdk_server.py"
    bookings = place.workspace / "bookings.txt"
    command = json.dumps([sys.executable, str(server)])
    place.config(MCP_CONFIG.format(command=command, bookings=bookings))
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("book a table")
    term.wait_for("Which day should I book Ito?")
    term.wait_for("fields: date (a string, required)")
    term.enter('{"date": "2026-05-01", "seats": 12}')
    term.wait_for("field 'seats' must be between 1 and 9")
    term.enter("2026-05-01")
    term.wait_for("booked it")
    assert bookings.read_text() == "Ito on 2026-05-01 for 2\n"
    term.ctrl("d")
    assert term.wait_exit() == 0


MCP_PROGRESS = """
[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {{name = "sdk__count", arguments = {{to = 2}}}}

[[provider.settings.script]]
content = "counted"

[permission]
mode = "bypass_permissions"

[store]
location = "chat.db"

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
"""


def test_an_mcp_servers_progress_shows_in_the_chat(place: Place) -> None:
    """Each progress notification of a running MCP call is a line on the chat's terminal
    (the chat's own redraw replaces it once the call's result is shown)."""
    from pathlib import Path

    server = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "sdk_server.py"
    place.config(MCP_PROGRESS.format(command=json.dumps([sys.executable, str(server)])))
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("count")
    term.wait_for("counted")
    # Read what was written, not the final screen: the chat's redraw (its spinner, then
    # the result) may already have replaced the progress line, which is what it is for.
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", term.raw.decode("utf-8", "replace"))
    assert "mcp: sdk/count: 2/2 step 2" in shown, shown
    term.ctrl("d")
    assert term.wait_exit() == 0


ELSEWHERE_CONFIG = CONFIG.replace(
    "[store]", '[[provider.settings.script]]\ncontent = "hello again"\n\n[store]'
)


def _avo(place: Place, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "avo.cli", *args],
        cwd=place.workspace,
        env=place.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_approval_answered_from_another_shell_is_said_and_the_run_goes_on(
    place: Place,
) -> None:
    """The chat asks; `avo runs approve` in another shell answers first: the chat withdraws
    its prompt, says in one line who approved which call, and continues the run; the next
    line typed is an ordinary message again (nothing was left waiting for it)."""
    place.config(ELSEWHERE_CONFIG)
    (place.workspace / "notes.md").write_text("alpha\nbeta\n")
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("capitalise beta")
    term.wait_for("approve? y / n")
    listed = _avo(place, "runs", "list", "--pending", "--json")
    assert listed.returncode == 0, listed.stderr
    [waiting] = json.loads(listed.stdout)
    run_id, call_id = str(waiting["run_id"]), str(waiting["tool_call_id"])
    approved = _avo(place, "runs", "approve", run_id, call_id, "--by", "bob")
    assert approved.returncode == 0, approved.stderr
    term.wait_for(
        f"answered elsewhere: write_file (call {call_id[:8]}) was approved by bob via cli"
    )
    term.wait_for("✓ write_file")
    term.wait_for("updated notes.md")
    assert (place.workspace / "notes.md").read_text() == "alpha\nBETA\n"
    term.enter("thanks")  # a message, not an answer to the withdrawn prompt
    term.wait_for("hello again")
    term.ctrl("d")
    assert term.wait_exit() == 0
    assert [r["state"] for r in place.runs()] == ["completed", "completed"]


def test_over_a_pipe_an_approval_answered_elsewhere_takes_no_line_from_the_next_entry(
    place: Place,
) -> None:
    """`avo chat` on pipes: the approval waits for its input line; `avo runs approve` in
    another shell answers first. The chat says so on stderr and goes on, and the next line
    written to its stdin is the next message (the withdrawn prompt does not swallow it)."""
    import time

    place.config(ELSEWHERE_CONFIG)
    (place.workspace / "notes.md").write_text("alpha\nbeta\n")
    err_path = place.workspace.parent / "chat-err.txt"
    with err_path.open("w") as err:
        chat = subprocess.Popen(
            [sys.executable, "-m", "avo.cli", "chat"],
            cwd=place.workspace,
            env=place.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        try:
            assert chat.stdin is not None and chat.stdout is not None
            chat.stdin.write("capitalise beta\n")
            chat.stdin.flush()
            deadline = time.monotonic() + 60
            while "[y/N/a=always]" not in err_path.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert "approve write_file notes.md?" in err_path.read_text()
            [waiting] = json.loads(_avo(place, "runs", "list", "--pending", "--json").stdout)
            run_id, call_id = str(waiting["run_id"]), str(waiting["tool_call_id"])
            approved = _avo(place, "runs", "approve", run_id, call_id, "--by", "bob")
            assert approved.returncode == 0, approved.stderr
            said = (
                f"answered elsewhere: write_file (call {call_id[:8]}) was approved by bob via cli"
            )
            while said not in err_path.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert said in err_path.read_text()
            out, _ = chat.communicate("thanks\n", timeout=60)  # the next entry, then the end
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.wait(10)
    assert chat.returncode == 0, err_path.read_text()
    assert "updated notes.md" in out and "hello again" in out, out
    assert (place.workspace / "notes.md").read_text() == "alpha\nBETA\n"
