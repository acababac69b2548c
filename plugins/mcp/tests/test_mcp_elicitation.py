"""A server's elicitation becomes a durable question in the run, answered from anywhere.

The SDK-written server's ``book_table`` asks for a date (``ctx.elicit``) and
appends every booking it makes to a file, so each test counts effects: the
first call is answered "cancel" (nobody has answered yet) and makes none; the
run records the question with the server's form and pauses; an answer (from
``avo.ops``, ``avo runs answer`` in another process, or a denial) is checked
against the form; the resumed run calls the tool again and its elicitation
gets the answer. Over stdio and over streamable HTTP (127.0.0.1), and with the
CLI as separate processes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_cli_kit import Terminal
from mcp_cli_kit import avo as _avo

from avo import AgentRuntime, EventType, FakeProvider, ModelResponse, RunState, ToolCall
from avo.approval import TOOL_INPUT, RequestKind
from avo.exceptions import ApprovalError
from avo.ops.approval import answer, deny, pending_requests
from avo_mcp import ClientFeatures, MCPClient, MCPHttpServer, MCPServer, ask_person
from avo_sqlite import SQLiteEventStore

TESTS_DIR = Path(__file__).resolve().parent
SERVER = [sys.executable, str(TESTS_DIR / "sdk_server.py")]

SCRIPT = [
    ModelResponse(
        tool_call=ToolCall(tool_call_id="c1", name="book_table", arguments={"place": "Ito"})
    ),
    ModelResponse(content="done"),
]


def _completed_text(events: list[Any]) -> str:
    done = [e.payload for e in events if e.event_type is EventType.TOOL_COMPLETED]
    return json.dumps(done[-1]["result"]["output"]) if done else ""


async def _run_once(server: Any, store: Any, *, resume: str | None = None) -> Any:
    """One "process": a fresh client to the server and a fresh runtime over the store."""
    async with MCPClient(server) as client:
        runtime = AgentRuntime(
            provider=FakeProvider(SCRIPT),
            tools=client.tools(),
            event_store=store,
            approval_callback=lambda call: True,
        )
        if resume is not None:
            return await runtime.resume(resume)
        return await runtime.run("book a table", run_id="r1")


def _stdio(bookings: Path) -> MCPServer:
    return MCPServer(
        command=SERVER,
        name="sdk",
        env={"SDK_BOOKINGS": str(bookings)},
        features=ClientFeatures(elicitation=ask_person),
    )


async def test_stdio_question_pauses_then_the_answer_books_once(tmp_path: Path) -> None:
    bookings = tmp_path / "bookings.txt"
    store = SQLiteEventStore(tmp_path / "runs.db")
    try:
        first = await _run_once(_stdio(bookings), store)
        assert first.status is RunState.PAUSED
        assert not bookings.exists()  # the first call was cancelled before it acted
        [request] = await pending_requests(store, "r1")
        assert (request.kind, request.rule, request.tool_name) == (
            RequestKind.QUESTION,
            TOOL_INPUT,
            "book_table",
        )
        assert request.question == "sdk asks: Which day should I book Ito?"
        assert request.schema is not None and set(request.schema["properties"]) == {
            "date",
            "seats",
        }
        with pytest.raises(ApprovalError, match="field 'seats' must be between 1 and 9"):
            await answer(store, "r1", '{"date": "2026-05-01", "seats": 40}', request.tool_call_id)
        await answer(store, "r1", "2026-05-01", request.tool_call_id)  # seats: the default
        second = await _run_once(_stdio(bookings), store, resume="r1")
        assert second.status is RunState.COMPLETED and second.output == "done"
        assert bookings.read_text() == "Ito on 2026-05-01 for 2\n"
        assert "booked Ito on 2026-05-01 for 2" in _completed_text(await store.get_events("r1"))
    finally:
        await store.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The SDK server over streamable HTTP (event streams, sessions) on a loopback port."""
    port, bookings = _free_port(), tmp_path / "http-bookings.txt"
    process = subprocess.Popen(
        [*SERVER, "http", str(port)],
        env={**os.environ, "SDK_BOOKINGS": str(bookings)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the SDK HTTP server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", bookings
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


async def test_http_a_denial_reaches_the_server_as_decline(
    tmp_path: Path, http_server: tuple[str, Path]
) -> None:
    url, bookings = http_server
    store = SQLiteEventStore(tmp_path / "runs.db")

    def server() -> MCPHttpServer:
        return MCPHttpServer(url=url, name="web", features=ClientFeatures(elicitation=ask_person))

    try:
        first = await _run_once(server(), store)
        assert first.status is RunState.PAUSED
        [request] = await pending_requests(store, "r1")
        assert request.question == "web asks: Which day should I book Ito?"
        await deny(store, "r1", request.tool_call_id, reason="not this week")
        second = await _run_once(server(), store, resume="r1")
        assert second.status is RunState.COMPLETED
        assert "no booking: the user chose decline" in _completed_text(await store.get_events("r1"))
        assert not bookings.exists()
    finally:
        await store.close()


CONFIG = """
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "sdk__book_table", arguments = {{place = "Ito"}}}}
[[provider.settings.script]]
content = "all booked"

[store]
location = "runs.db"

[permission]
mode = "bypass_permissions"

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
env = {{SDK_BOOKINGS = "{bookings}"}}
"""


def test_cli_run_pauses_answer_elsewhere_resume_books_once(tmp_path: Path) -> None:
    bookings = tmp_path / "bookings.txt"
    (tmp_path / "avo.toml").write_text(
        CONFIG.format(command=json.dumps(SERVER), bookings=bookings), encoding="utf-8"
    )
    first = _avo(tmp_path, "run", "book a table", "--json")
    assert first.returncode == 3, first.stdout + first.stderr  # paused; the process exits
    data = json.loads(first.stdout)
    [waiting] = data["waiting"]
    assert waiting["kind"] == "question" and "Which day should I book Ito?" in waiting["summary"]
    run_id, call_id = data["run_id"], waiting["tool_call_id"]
    assert not bookings.exists()
    listed = _avo(tmp_path, "runs", "list", "--pending", "--json")
    [row] = json.loads(listed.stdout)
    assert row["tool_call_id"] == call_id
    bad = _avo(tmp_path, "runs", "answer", run_id, call_id, '{"when": "soon"}')
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[0] == (
        f"avo: the answer to call {call_id} does not fit its form: the form has no field "
        "'when' (fields: date, seats)"
    )
    given = _avo(tmp_path, "runs", "answer", run_id, call_id, '{"date": "2026-05-01", "seats": 3}')
    assert given.returncode == 0, given.stderr
    resumed = _avo(tmp_path, "runs", "resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["output"] == "all booked"
    assert bookings.read_text() == "Ito on 2026-05-01 for 3\n"
    replayed = _avo(tmp_path, "replay", run_id)  # the question and answer play back
    assert replayed.returncode == 0 and " ok " in replayed.stdout, replayed.stdout + replayed.stderr
    assert bookings.read_text() == "Ito on 2026-05-01 for 3\n"  # replay runs no tools


PROGRESS_CONFIG = """
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "sdk__count", arguments = {{to = 3}}}}
[[provider.settings.script]]
tool_call = {{name = "sdk__where", arguments = {{}}}}
[[provider.settings.script]]
content = "counted"

[store]
location = "runs.db"

[permission]
mode = "bypass_permissions"

[mcp]
user_servers = false
progress = "print"
[mcp.servers.sdk]
command = {command}
"""


def test_cli_run_shows_progress_and_offers_the_workspace_as_root(tmp_path: Path) -> None:
    (tmp_path / "avo.toml").write_text(
        PROGRESS_CONFIG.format(command=json.dumps(SERVER)), encoding="utf-8"
    )
    done = _avo(tmp_path, "run", "count", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("mcp: ")]
    assert lines == [f"mcp: sdk/count: {n}/3 step {n}" for n in (1, 2, 3)]
    run_id = json.loads(done.stdout)["run_id"]
    trace = _avo(tmp_path, "runs", "inspect", run_id, "--json")
    assert trace.returncode == 0, trace.stderr
    assert tmp_path.resolve().as_uri() in trace.stdout  # where: the roots it was given


def _booking_config(tmp_path: Path) -> Path:
    bookings = tmp_path / "bookings.txt"
    (tmp_path / "avo.toml").write_text(
        CONFIG.format(command=json.dumps(SERVER), bookings=bookings), encoding="utf-8"
    )
    return bookings


def test_the_terminal_prompt_answers_the_form_in_place(tmp_path: Path) -> None:
    bookings = _booking_config(tmp_path)
    term = Terminal(tmp_path, "run", "book a table")
    shown = term.read_until("answer: ")
    assert "sdk asks: Which day should I book Ito?" in shown
    assert "fields: date (a string, required), seats (an integer, default 2)" in shown
    term.send(b'{"seats": 3}\r')  # no date: said at once, asked again
    term.read_until("field 'date' is required")
    term.send(b'{"date": "2026-05-01", "seats": 3}\r')
    assert term.finish() == 0, term.seen
    assert bookings.read_text() == "Ito on 2026-05-01 for 3\n"


def test_a_process_killed_while_the_question_waits_loses_nothing(tmp_path: Path) -> None:
    bookings = _booking_config(tmp_path)
    term = Terminal(tmp_path, "run", "book a table")
    term.read_until("answer: ")
    term.kill()  # SIGKILL while the question waits at the prompt
    listed = _avo(tmp_path, "runs", "list", "--pending", "--json")
    [row] = json.loads(listed.stdout)
    given = _avo(tmp_path, "runs", "answer", row["run_id"], row["tool_call_id"], "2026-06-01")
    assert given.returncode == 0, given.stderr
    resumed = _avo(tmp_path, "runs", "resume", row["run_id"], "--json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert bookings.read_text() == "Ito on 2026-06-01 for 2\n"


async def test_http_elicitations_of_concurrent_calls_reach_their_own_call(
    http_server: tuple[str, Path],
) -> None:
    """Over streamable HTTP a server's request arrives on its call's answer stream, so
    two calls running at once each get their own question (over stdio, where nothing
    ties them, such an elicitation is answered cancel)."""
    import asyncio

    from avo.exceptions import ToolInputRequiredError

    url, bookings = http_server
    server = MCPHttpServer(url=url, name="web", features=ClientFeatures(elicitation=ask_person))
    async with MCPClient(server) as client:
        [book] = [tool for tool in client.tools() if tool.metadata.name == "book_table"]
        asked = await asyncio.gather(
            book.invoke({"place": "Ito"}), book.invoke({"place": "Sora"}), return_exceptions=True
        )
    assert all(isinstance(a, ToolInputRequiredError) for a in asked), asked
    questions = {a.question for a in asked if isinstance(a, ToolInputRequiredError)}
    assert questions == {
        "web asks: Which day should I book Ito?",
        "web asks: Which day should I book Sora?",
    }
    assert not bookings.exists()


SAMPLING_CONFIG = """
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

{permission}

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
"""


@pytest.mark.parametrize(
    ("permission", "expected"),
    [
        ('[permission]\nmode = "bypass_permissions"', "summary: a short story"),
        (
            '[permission]\nmode = "bypass_permissions"\n'
            '[[permission.deny]]\ntool = "mcp_sampling"\nreason = "no model use by servers"',
            "was not approved: no model use by servers",
        ),
    ],
)
def test_cli_run_answers_sampling_with_its_own_model_after_approval(
    tmp_path: Path, permission: str, expected: str
) -> None:
    (tmp_path / "avo.toml").write_text(
        SAMPLING_CONFIG.format(command=json.dumps(SERVER), permission=permission),
        encoding="utf-8",
    )
    done = _avo(tmp_path, "run", "summarize", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    trace = _avo(tmp_path, "runs", "inspect", run_id, "--json")
    assert expected in trace.stdout
