"""Recovery from the CLI with a real HTTP provider and a third-party tool plugin.

The provider is the ``openai`` plugin talking to a loopback server that speaks
the OpenAI Chat Completions wire format; the tool is ``note`` from a
third-party package (``avo-journal``) built into a wheel and pip-installed in
a fresh venv. The tool writes ``start X`` / ``done X`` to ``journal.txt``, so
the tests see exactly which effects happened and how often. Signals are real:
Ctrl-C is SIGINT, kill is SIGKILL.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_kit import CLI, finish, interrupt, kill, plugin_venv_with_journal, wait_for, write

from avo.models import TokenUsage
from avo.testing.providers import ScriptedHTTPServer

pytest.importorskip("avo_providers")
from avo_providers.wire_fakes import OpenAIWire

WIRE = OpenAIWire()
USAGE = TokenUsage(input_tokens=40, output_tokens=8)
CONFIG = """
tools = ["note"]

[provider]
name = "openai"
[provider.settings]
model = "gpt-4o-mini"

[store]
location = "runs.db"

[permission]
mode = "bypass_permissions"
"""
STARTED = re.compile(r"^avo: run (\S+) started \(store runs\.db\)$")


@pytest.fixture(scope="module")
def journal_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The python of a venv where avo-journal (a third-party tool plugin) is installed."""
    return plugin_venv_with_journal(tmp_path_factory.mktemp("journal-plugin"))


@pytest.fixture
def server() -> Iterator[ScriptedHTTPServer]:
    with ScriptedHTTPServer() as running:
        yield running


@pytest.fixture
def user(cli: CLI, journal_python: str, server: ScriptedHTTPServer) -> CLI:
    """The CLI of the venv with avo-journal, configured for the loopback provider."""
    cli.python = journal_python
    write(cli.cwd / "avo.toml", CONFIG)
    return cli


def _env(server: ScriptedHTTPServer) -> dict[str, str]:
    return {"AVO_OPENAI_BASE_URL": server.url + "/v1", "AVO_OPENAI_API_KEY": "sk-test-0123456789"}


def _note(call_id: str, text: str, seconds: float = 0.0) -> object:
    return WIRE.tool_call_stream(call_id, "note", {"text": text, "seconds": seconds}, USAGE)


def _journal(cli: CLI) -> list[str]:
    path = cli.cwd / "journal.txt"
    return path.read_text().splitlines() if path.exists() else []


def _run_id(process_stderr_first_line: str) -> str:
    match = STARTED.match(process_stderr_first_line)
    assert match, process_stderr_first_line
    return match.group(1)


def _listed(cli: CLI, env: dict[str, str]) -> dict[str, dict[str, object]]:
    listing = cli("runs", "list", "--json", **env)
    assert listing.code == 0, listing.err
    return {row["run_id"]: row for row in json.loads(listing.out)}


def _minted(cli: CLI, run_id: str) -> dict[str, list[str]]:
    """Each vendor call id of the run -> the ids the runtime minted for it."""
    import asyncio

    from avo.testing import minted_ids
    from avo_sqlite import SQLiteEventStore

    async def read() -> dict[str, list[str]]:
        async with SQLiteEventStore(cli.cwd / "runs.db") as store:
            return minted_ids(await store.get_events(run_id))

    return asyncio.run(read())


def _start_and_read_run_id(cli: CLI, env: dict[str, str], *args: str) -> tuple[object, str]:
    process = cli.start("run", "take notes", *args, **env)
    assert process.stderr is not None
    first = process.stderr.readline().rstrip("\n")
    return process, _run_id(first)


def test_kill_during_a_tool_then_resume_runs_nothing_twice(
    user: CLI, server: ScriptedHTTPServer
) -> None:
    """SIGKILL mid-tool: refused until --fail-open-tools, then finished; 'b' ran once."""
    server.push(
        _note("call-a", "a"), _note("call-b", "b", 60), WIRE.text_stream("all noted", USAGE)
    )
    env = _env(server)
    process, run_id = _start_and_read_run_id(user, env)
    wait_for(lambda: "start b" in _journal(user), what="the second tool call to start")
    kill(process)  # SIGKILL: no cleanup, as a crash

    row = _listed(user, env)[run_id]
    assert row["activity"] == "interrupted" and row["state"] == "tool_executing"

    refused = user("runs", "resume", run_id, **env)
    assert refused.code == 2
    assert refused.first_err == f"avo: resuming run {run_id} (store runs.db)"
    line = refused.err.splitlines()[1]
    assert line.startswith("avo: Cannot safely resume because these tool calls started without")
    # the open call is named by the id the runtime gave the vendor's call-b
    assert _minted(user, run_id)["call-b"][0] in line and "resume with --fail-open-tools" in line

    resumed = user("runs", "resume", run_id, "--fail-open-tools", **env)
    assert resumed.code == 0, resumed.err
    assert resumed.out == "all noted\n"
    assert _journal(user) == ["start a", "done a", "start b"]  # b never ran again
    assert _listed(user, env)[run_id]["state"] == "completed"
    # the model was told what happened to b
    last = json.loads(server.requests[-1].body)["messages"][-1]
    assert last["role"] == "tool" and "may have partly taken effect" in last["content"]


def test_kill_during_a_model_call_resumes_and_asks_again(
    user: CLI, server: ScriptedHTTPServer
) -> None:
    slow = WIRE.text_stream("never seen", USAGE)
    slow.delay_seconds = 60
    server.push(_note("call-a", "a"), slow)
    env = _env(server)
    process, run_id = _start_and_read_run_id(user, env)
    wait_for(lambda: len(server.requests) == 2, what="the second model call")
    kill(process)
    assert _listed(user, env)[run_id]["activity"] == "interrupted"
    server.push(WIRE.text_stream("noted a", USAGE))
    resumed = user("runs", "resume", run_id, **env)
    assert resumed.code == 0, resumed.err
    assert resumed.out == "noted a\n"
    assert _journal(user) == ["start a", "done a"]


def test_ctrl_c_during_a_model_call_leaves_the_run_resumable(
    user: CLI, server: ScriptedHTTPServer
) -> None:
    slow = WIRE.text_stream("never seen", USAGE)
    slow.delay_seconds = 60
    server.push(slow)
    env = _env(server)
    process, run_id = _start_and_read_run_id(user, env)
    wait_for(lambda: len(server.requests) == 1, what="the model call")
    interrupt(process, signal.SIGINT)
    done = finish(process)
    assert done.code == 130, done.err
    assert done.err.splitlines()[0] == (
        f"avo: interrupting run {run_id} (SIGINT); press Ctrl-C again to quit at once"
    )
    assert f"resume with: avo runs resume {run_id}" in done.err
    row = _listed(user, env)[run_id]
    assert (row["state"], row["activity"]) == ("paused", "interrupted")  # not cancelled
    server.push(WIRE.text_stream("here it is", USAGE))
    resumed = user("runs", "resume", run_id, **env)
    assert (resumed.code, resumed.out) == (0, "here it is\n"), resumed.err


def test_sigterm_during_a_tool_records_it_and_resumes(
    user: CLI, server: ScriptedHTTPServer
) -> None:
    server.push(_note("call-a", "a", 60))
    env = _env(server)
    process, run_id = _start_and_read_run_id(user, env)
    wait_for(lambda: "start a" in _journal(user), what="the tool to start")
    interrupt(process, signal.SIGTERM)
    done = finish(process)
    assert done.code == 130, done.err
    assert "status:      interrupted (resumable)" in done.err
    assert _listed(user, env)[run_id]["activity"] == "interrupted"
    server.push(WIRE.text_stream("a was cut short", USAGE))
    resumed = user("runs", "resume", run_id, **env)  # no --fail-open-tools needed
    assert (resumed.code, resumed.out) == (0, "a was cut short\n"), resumed.err
    assert _journal(user) == ["start a"]
    told = json.loads(server.requests[-1].body)["messages"][-1]
    assert "SIGTERM received" in told["content"]


def test_a_live_run_is_shown_live_and_a_second_driver_is_refused(
    user: CLI, server: ScriptedHTTPServer
) -> None:
    server.push(_note("call-a", "a", 60))
    env = _env(server)
    process, run_id = _start_and_read_run_id(user, env)
    wait_for(lambda: "start a" in _journal(user), what="the tool to start")
    row = _listed(user, env)[run_id]
    holder = f"avo-run:{__import__('socket').gethostname()}:{process.pid}"
    assert (row["activity"], row["holder"]) == ("live", holder)
    table = user("runs", "list", **env)
    assert f"live ({holder})" in table.out
    second = user("runs", "resume", run_id, **env)
    assert second.code == 2
    assert second.err.splitlines()[1].startswith(
        f"avo: run {run_id} is being driven by {holder} right now"
    )
    cancel = user("runs", "cancel", run_id, **env)
    assert cancel.code == 2 and f"is being driven by {holder}" in cancel.first_err
    interrupt(process, signal.SIGINT)
    assert finish(process).code == 130
    cancelled = user("runs", "cancel", run_id, **env)
    assert (cancelled.code, cancelled.out) == (0, f"cancelled run {run_id} (user_cancelled)\n")
    assert _listed(user, env)[run_id]["state"] == "cancelled"


def test_cancel_closes_a_run_killed_during_a_tool(user: CLI, server: ScriptedHTTPServer) -> None:
    server.push(_note("call-a", "a", 60))
    env = _env(server)
    process, run_id = _start_and_read_run_id(user, env)
    wait_for(lambda: "start a" in _journal(user), what="the tool to start")
    kill(process)
    cancelled = user("runs", "cancel", run_id, "--json", **env)
    assert cancelled.code == 0, cancelled.err
    result = json.loads(cancelled.out)
    assert (result["status"], result["stop_reason"]) == ("cancelled", "user_cancelled")
    trace = user("runs", "inspect", run_id, **env).out
    assert "tool_failed" in trace and "the run was cancelled" in trace
    again = user("runs", "resume", run_id, **env)
    assert again.code == 2 and "already finished (cancelled)" in again.err


def test_the_run_id_is_printed_before_anything_else(user: CLI, server: ScriptedHTTPServer) -> None:
    """A killed ``avo run`` has already told the user which run to resume."""
    slow = WIRE.text_stream("x", USAGE)
    slow.delay_seconds = 60
    server.push(slow)
    env = _env(server)
    process, run_id = _start_and_read_run_id(user, env)
    kill(process)
    assert run_id in _listed(user, env)


def test_workspace_tools_are_bound_to_the_recorded_directory_on_resume(
    user: CLI, server: ScriptedHTTPServer, tmp_path: Path
) -> None:
    slow = WIRE.text_stream("x", USAGE)
    slow.delay_seconds = 60
    server.push(_note("call-a", "a"), slow)
    env = _env(server)
    process, run_id = _start_and_read_run_id(user, env)
    wait_for(lambda: len(server.requests) == 2, what="the second model call")
    kill(process)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server.push(_note("call-c", "c"), WIRE.text_stream("done", USAGE))
    resumed = user("runs", "resume", run_id, "-d", str(user.cwd / "runs.db"), cwd=elsewhere, **env)
    assert resumed.code == 0, resumed.err
    assert _journal(user) == ["start a", "done a", "start c", "done c"]
    assert not (elsewhere / "journal.txt").exists()


def test_a_call_awaiting_approval_with_no_terminal_pauses_the_run(
    user: CLI, server: ScriptedHTTPServer
) -> None:
    """No terminal to ask: the run pauses durably (exit 3); approve elsewhere, then resume.

    (Ctrl-C at a terminal prompt is tested on a real pseudo-terminal in
    test_human_loop.py: the run was paused before the question appeared.)
    """
    write(user.cwd / "avo.toml", CONFIG.replace("bypass_permissions", "default"))
    server.push(_note("call-a", "a"))
    env = _env(server)
    process = user.start("run", "take notes", stdin_open=True, **env)
    assert process.stderr is not None
    run_id = _run_id(process.stderr.readline().rstrip("\n"))
    done = finish(process)
    assert done.code == 3, done.err  # waits for a person; nothing asked on a pipe
    assert "waiting:" in done.err and "note" in done.err
    assert _listed(user, env)[run_id]["activity"] == "paused (awaiting approval)"
    assert _journal(user) == []  # nothing ran without an answer
    approved = user("runs", "approve", run_id, **env)
    assert approved.code == 0, approved.err
    server.push(WIRE.text_stream("noted", USAGE))  # the approved call runs, then the model
    resumed = user("runs", "resume", run_id, **env)
    assert (resumed.code, resumed.out) == (0, "noted\n"), resumed.err
    assert _journal(user) == ["start a", "done a"]
