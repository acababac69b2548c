"""What ``avo run`` shows: the answer alone on stdout, failures and progress on stderr.

Also the defaults a first-time user relies on: workspace tools work in the
current directory, and shell tools find a sandbox without naming one.
"""

from __future__ import annotations

import json
import shutil

import pytest
from cli_kit import CLI, write

FAILING_TOOL = """
tools = ["read_file"]

[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {name = "read_file", arguments = {path = "missing.txt"}}
[[provider.settings.script]]
content = "I could not read it"
"""

PROVIDER_DOWN = """
[provider]
name = "openai"
[provider.settings]
model = "gpt-4o-mini"
base_url = "http://127.0.0.1:9/v1"
api_key = "sk-test-0123456789"
request_timeout_seconds = 2

[policy]
consecutive_error_limit = 2

[policy.retry]
initial_delay = 0.01
max_delay = 0.05
"""


def test_a_tool_failure_is_shown_in_full_even_when_the_run_completes(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", FAILING_TOOL)
    result = cli("run", "read it")
    assert result.code == 0
    assert result.out == "I could not read it\n"
    lines = result.err.splitlines()
    assert lines[0].startswith("avo: run ") and lines[0].endswith(" started (store avo.db)")
    assert lines[1].startswith("  ✗ read_file failed: ")
    assert "missing.txt" in lines[1] and "…" not in lines[1]
    assert "warning:     1 call(s) failed along the way; the last:" in result.err


def test_a_provider_failure_names_its_cause_not_just_the_count(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", PROVIDER_DOWN)
    result = cli("run", "hello")
    assert result.code == 1
    assert "stop reason: consecutive_errors" in result.err
    cause = next(line for line in result.err.splitlines() if line.startswith("cause:"))
    assert cause == (
        "cause:       model call: OpenAI request failed: ConnectError: All connection attempts "
        "failed"
    )
    # What a user sees: each model call is tried 3 times (RetryPolicy.max_attempts) with
    # a backoff that starts over for every call; a call whose 3 attempts all failed is
    # one consecutive error, and the second (consecutive_error_limit = 2) stops the run.
    failed = [line for line in result.err.splitlines() if "! model call failed" in line]
    said = [line.split("(", 1)[1].split(")", 1)[0] for line in failed]
    waits = [s.split(", ")[1].removeprefix("retrying in ") for s in said]
    assert [s.split(",")[0] for s in said] == ["attempt 1/3", "attempt 2/3", "attempt 3/3"] * 2
    assert waits[-1] == "no more retries" and all(w.endswith("s") for w in waits[:-1])
    assert all(line.endswith("ConnectError: All connection attempts failed") for line in failed)


def test_json_output_and_verbose_progress(cli: CLI) -> None:
    write(cli.cwd / "notes.txt", "hello\n")
    write(
        cli.cwd / "avo.toml",
        """
        tools = ["read_file"]
        [provider]
        name = "fake"
        [[provider.settings.script]]
        tool_call = {name = "read_file", arguments = {path = "notes.txt"}}
        [[provider.settings.script]]
        content = "it says hello"
        """,
    )
    as_json = cli("run", "read", "--json")
    assert as_json.code == 0 and as_json.err == ""
    data = json.loads(as_json.out)
    assert (data["status"], data["output"], data["steps"], data["failures"]) == (
        "completed",
        "it says hello",
        2,
        [],
    )
    verbose = cli("-v", "run", "read")
    assert verbose.out == "it says hello\n"
    progress = verbose.err.splitlines()
    assert progress[1] == '  → read_file {"path": "notes.txt"}'
    assert progress[2].startswith("  ✓ read_file (") and progress[2].endswith(" ms)")
    quiet = cli("run", "read", "-q")
    assert (quiet.out, quiet.err) == ("it says hello\n", "")


def test_workspace_tools_work_in_the_current_directory_by_default(cli: CLI) -> None:
    write(cli.cwd / "src" / "app.py", "print('hi')\n")
    write(
        cli.cwd / "avo.toml",
        """
        tools = ["glob"]
        [provider]
        name = "fake"
        [[provider.settings.script]]
        tool_call = {name = "glob", arguments = {pattern = "**/*.py"}}
        [[provider.settings.script]]
        content = "found it"
        """,
    )
    result = cli("run", "find python files", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["failures"] == []
    trace = cli("runs", "inspect", data["run_id"]).out
    assert "src/app.py" in trace
    flag = cli("run", "find", "--tool", "glob", "--tool", "read_file", "--json")
    assert json.loads(flag.out)["failures"] == []


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_shell_tools_pick_bubblewrap_when_no_docker_engine_answers(cli: CLI) -> None:
    write(
        cli.cwd / "avo.toml",
        """
        tools = ["run_shell"]
        [provider]
        name = "fake"
        [[provider.settings.script]]
        tool_call = {name = "run_shell", arguments = {command = "echo from-the-sandbox > out.txt"}}
        [[provider.settings.script]]
        content = "ran"
        [permission]
        mode = "bypass_permissions"
        """,
    )
    no_docker = str(cli.home / "no-docker.sock")
    result = cli("run", "shell", "--json", DOCKER_HOST=f"unix://{no_docker}")
    assert result.code == 0, result.err
    assert json.loads(result.out)["failures"] == []
    assert (cli.cwd / "out.txt").read_text() == "from-the-sandbox\n"
    sandbox = cli("sandbox", "run", "--", "echo", "hi", DOCKER_HOST=f"unix://{no_docker}")
    assert (sandbox.code, sandbox.out) == (0, "hi\n"), sandbox.err


def test_no_sandbox_at_all_is_a_clear_error_at_start(cli: CLI) -> None:
    write(
        cli.cwd / "avo.toml",
        '[provider]\nname = "fake"\n',
    )
    result = cli(
        "run", "shell", "--tool", "run_shell", DOCKER_HOST="unix:///nope.sock", PATH="/nonexistent"
    )
    assert result.code == 2
    assert result.first_err.startswith(
        "avo: shell tools need a sandbox and none works here (docker: "
    )
    assert (
        "bubblewrap: bwrap is not installed (e.g. apt-get install bubblewrap)" in result.first_err
    )
