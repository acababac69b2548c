"""A run waits for a person across processes: pause, exit, approve or deny elsewhere, resume.

Three separate ``avo`` processes, as a user would run them, on SQLite and on
PostgreSQL: ``avo run`` pauses at a call that needs approval (no terminal to
ask) and exits; ``avo runs approve`` (or ``deny --reason``) answers it; ``avo
runs resume`` finishes the run. With a denial, the reason is the call's result
in the transcript the model was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_kit import CLI, write

CONFIG = """
tools = [{{name = "write_file", settings = {{workspace = "."}}}}]
{store}
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "write_file", arguments = {{path = "notes.md", content = "hello\\n"}}}}
usage = {{input_tokens = 10, output_tokens = 5}}
[[provider.settings.script]]
content = "all done"
usage = {{input_tokens = 12, output_tokens = 3}}
"""


def _dsn() -> str | None:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip()
    if dsn:
        return dsn
    path = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")
    return path.read_text().strip() if path.is_file() else None


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> Iterator[str]:
    """The ``[store]`` table of the config: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield '[store]\nlocation = "runs.db"'
        return
    dsn = _dsn()
    if dsn is None:
        pytest.skip("no PostgreSQL test server (run scripts/ensure-services.sh)")
    asyncpg = pytest.importorskip("asyncpg")
    pytest.importorskip("avo_postgres")
    schema = f"avo_hitl_{uuid.uuid4().hex[:10]}"

    async def sql(statement: str) -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(sql(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in dsn else "?"
    try:
        yield f'[store]\nlocation = "{dsn}{separator}search_path={schema}"'
    finally:
        asyncio.run(sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))


def _transcript(cli: CLI, store: str, run_id: str) -> list[dict[str, Any]]:
    """The transcript of the run's latest checkpoint (what the model was last sent)."""
    from avo.compose import open_store

    location = store.split('"')[1]
    if "://" not in location:
        location = str(cli.cwd / location)

    async def read() -> list[dict[str, Any]]:
        opened = open_store(location, environ={})
        try:
            checkpoint = await opened.get_latest_checkpoint(run_id)
            assert checkpoint is not None
            return list(checkpoint.messages)
        finally:
            await opened.close()

    return asyncio.run(read())


def _paused_run(cli: CLI, store: str) -> tuple[str, str]:
    write(cli.cwd / "avo.toml", CONFIG.format(store=store))
    first = cli("run", "write notes", "--json")
    assert first.code == 3, first.out + first.err  # paused for a person; the process exits
    data = json.loads(first.out)
    assert data["status"] == "paused" and data["interrupted"] is False
    [waiting] = data["waiting"]
    assert waiting["kind"] == "approval" and "write_file" in waiting["summary"]
    assert not (cli.cwd / "notes.md").exists()
    pending = cli("runs", "list", "--pending", "--json")
    assert pending.code == 0, pending.err
    [row] = json.loads(pending.out)
    assert (row["run_id"], row["tool_call_id"], row["tool"]) == (
        data["run_id"],
        waiting["tool_call_id"],
        "write_file",
    )
    assert row["risk"] == "modify" and row["arguments"]["path"] == "notes.md"
    return data["run_id"], waiting["tool_call_id"]


def test_pause_exit_approve_elsewhere_resume_to_completion(cli: CLI, store: str) -> None:
    run_id, call_id = _paused_run(cli, store)
    approved = cli("runs", "approve", run_id, "--reason", "fine by me")  # a second process
    assert approved.code == 0, approved.err
    assert approved.out.startswith(f"approved {call_id} (write_file) of run {run_id}")
    assert f"avo runs resume {run_id}" in approved.err
    again = cli("runs", "approve", run_id)
    assert again.code == 2 and "is not waiting for an answer" not in again.err
    assert again.first_err.startswith(f"avo: call {call_id} of run {run_id} was already approved")
    assert again.first_err.endswith("fine by me; this answer was not recorded")
    resumed = cli("runs", "resume", run_id, "--json")  # a third process
    assert resumed.code == 0, resumed.out + resumed.err
    assert json.loads(resumed.out)["output"] == "all done"
    assert (cli.cwd / "notes.md").read_text() == "hello\n"
    trace = cli("runs", "inspect", run_id)
    assert "human_input_requested" in trace.out and "human_input_received" in trace.out
    assert cli("runs", "list", "--pending").out.startswith("no run waits for a person")


def test_a_denial_whose_reason_the_model_reads(cli: CLI, store: str) -> None:
    run_id, call_id = _paused_run(cli, store)
    denied = cli("runs", "deny", run_id, call_id[:8], "--reason", "put notes in docs/ instead")
    assert denied.code == 0, denied.err
    resumed = cli("runs", "resume", run_id, "--json")
    assert resumed.code == 0, resumed.out + resumed.err
    assert json.loads(resumed.out)["status"] == "completed"
    assert not (cli.cwd / "notes.md").exists()  # the tool never ran
    [seen] = [m for m in _transcript(cli, store, run_id) if m.get("role") == "tool"]
    assert seen["tool_call_id"] == call_id
    assert "put notes in docs/ instead" in str(seen["content"])


def test_bad_answers_are_one_line_errors(cli: CLI, store: str) -> None:
    run_id, call_id = _paused_run(cli, store)
    wrong = cli("runs", "answer", run_id, "some text")
    assert wrong.code == 2
    assert wrong.first_err == (
        f"avo: run {run_id} has no open question request (it waits for: {call_id} (write_file))"
    )
    unknown = cli("runs", "approve", run_id, "nope")
    assert unknown.code == 2
    assert unknown.first_err == (
        f"avo: run {run_id} has no open request for call 'nope' (open: {call_id})"
    )


# ---------------------------------------------------------------- the terminal prompt


class Terminal:
    """``avo`` on a real pseudo-terminal (stdin is a TTY, so it asks there)."""

    def __init__(self, cli: CLI, *args: str) -> None:
        import pty

        env = cli.env(TERM="dumb")
        argv = cli.argv(*args)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become avo
            os.chdir(cli.cwd)
            os.execve(argv[0], argv, env)
        self.seen = ""

    def read_until(self, text: str, timeout: float = 60) -> str:
        import select
        import time

        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; the terminal showed:\n{self.seen}"
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    assert text in self.seen, f"exited before {text!r}:\n{self.seen}"
                self.seen += chunk.decode("utf-8", "replace")
        return self.seen

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def finish(self, timeout: float = 60) -> int:
        import select
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                with contextlib.suppress(OSError):  # EIO once the child has gone
                    self.seen += os.read(self.fd, 4096).decode("utf-8", "replace")
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        os.kill(self.pid, 9)
        raise AssertionError(f"avo did not exit; the terminal showed:\n{self.seen}")


def test_the_prompt_answers_the_pause_in_place(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", CONFIG.format(store='[store]\nlocation = "runs.db"'))
    term = Terminal(cli, "run", "write notes")
    shown = term.read_until("? [y/N]: ")
    assert 'Approve write_file({"content": "hello\\n", "path": "notes.md"})' in shown
    term.send(b"y\r")
    assert term.finish() == 0, term.seen
    assert (cli.cwd / "notes.md").read_text() == "hello\n"
    assert "stop reason: completed" in term.seen


def test_ctrl_c_at_the_prompt_pauses_the_run_for_later(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", CONFIG.format(store='[store]\nlocation = "runs.db"'))
    term = Terminal(cli, "run", "write notes")
    term.read_until("? [y/N]: ")
    term.send(b"\x03")  # Ctrl-C: the terminal sends SIGINT to avo
    code = term.finish(timeout=20)
    assert code == 3, term.seen  # paused for a person, not cancelled
    assert "paused (waiting for a person)" in term.seen
    assert not (cli.cwd / "notes.md").exists()
    listed = cli("runs", "list", "--pending", "--json")
    [row] = json.loads(listed.out)
    assert cli("runs", "approve", row["run_id"]).code == 0
    resumed = cli("runs", "resume", row["run_id"])
    assert resumed.code == 0, resumed.err
    assert (cli.cwd / "notes.md").read_text() == "hello\n"


def test_a_no_with_words_at_the_prompt_is_the_reason_the_model_reads(cli: CLI) -> None:
    store = '[store]\nlocation = "runs.db"'
    write(cli.cwd / "avo.toml", CONFIG.format(store=store))
    term = Terminal(cli, "run", "write notes")
    term.read_until("? [y/N]: ")
    term.send(b"no, write to docs/notes.md\r")
    assert term.finish() == 0, term.seen
    assert not (cli.cwd / "notes.md").exists()
    run_id = next(line.split()[-1] for line in term.seen.splitlines() if line.startswith("run id:"))
    [seen] = [m for m in _transcript(cli, store, run_id) if m.get("role") == "tool"]
    assert "no, write to docs/notes.md" in str(seen["content"])


QUESTION = """
tools = ["ask_user"]
[store]
location = "runs.db"
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {name = "ask_user", arguments = {question = "Which colour?", choices = ["red", "blue"]}}
[[provider.settings.script]]
content = "painting it"
"""


def test_a_question_answered_from_another_process(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", QUESTION)
    first = cli("run", "paint the shed")
    assert first.code == 3, first.err
    assert "question from ask_user: Which colour? [red / blue]" in first.err
    assert "avo runs answer" in first.err
    run_id = next(line.split()[-1] for line in first.err.splitlines() if line.startswith("run id:"))
    wrong = cli("runs", "answer", run_id, "green")
    assert wrong.code == 2 and "'green' is not one of the choices" in wrong.first_err
    assert cli("runs", "answer", run_id, "-", stdin="blue\n").code == 0
    resumed = cli("runs", "resume", run_id, "--json")
    assert resumed.code == 0, resumed.err
    trace = cli("runs", "inspect", run_id, "--json")
    events = json.loads(trace.out)["events"]
    [done] = [e for e in events if e["event_type"] == "tool_completed"]
    assert done["payload"]["result"]["output"] == {"answer": "blue"}


# ---------------------------------------------------------------- plan mode across processes

PLAN = """
tools = ["submit_plan", "ask_user", {{name = "write_file", settings = {{workspace = "."}}}}]
{store}
[permission]
mode = "plan"
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "submit_plan", arguments = {{plan_text = "1. write notes.md"}}}}
[[provider.settings.script]]
tool_call = {{name = "ask_user", arguments = {{question = "Shall I write notes.md now?"}}}}
[[provider.settings.script]]
tool_call = {{name = "write_file", arguments = {{path = "notes.md", content = "planned\\n"}}}}
[[provider.settings.script]]
content = "written as planned"
"""


def test_a_plan_submitted_before_a_pause_still_counts_after_resume_elsewhere(
    cli: CLI, store: str
) -> None:
    write(cli.cwd / "avo.toml", PLAN.format(store=store))
    first = cli("run", "plan, ask, then write", "--json")
    assert first.code == 3, first.out + first.err  # paused at the question; the process exits
    run_id = json.loads(first.out)["run_id"]
    assert cli("runs", "answer", run_id, "yes, go").code == 0
    resumed = cli("runs", "resume", run_id, "--json")  # another process, a fresh callback
    assert resumed.code == 0, resumed.out + resumed.err
    assert json.loads(resumed.out)["output"] == "written as planned"
    assert (cli.cwd / "notes.md").read_text() == "planned\n"  # the edit was not denied again
    events = json.loads(cli("runs", "inspect", run_id, "--json").out)["events"]
    approved = [e["payload"] for e in events if e["event_type"] == "tool_approved"]
    assert [p["name"] for p in approved] == ["submit_plan", "ask_user", "write_file"]
    assert not [e for e in events if e["event_type"] == "tool_denied"]


# ---------------------------------------------------------------- the prompt or another shell


def _waiting_run(cli: CLI, store: str) -> tuple[Terminal, str, str]:
    """``avo run`` asking at a terminal; the run id and call id read from another shell."""
    write(cli.cwd / "avo.toml", CONFIG.format(store=store))
    term = Terminal(cli, "run", "write notes")
    term.read_until("? [y/N]: ")
    listed = cli("runs", "list", "--pending", "--json")  # the store says what it waits for
    assert listed.code == 0, listed.err
    [row] = json.loads(listed.out)
    return term, row["run_id"], row["tool_call_id"]


def test_another_shell_answers_while_the_prompt_waits(cli: CLI, store: str) -> None:
    term, run_id, call_id = _waiting_run(cli, store)
    approved = cli("runs", "approve", run_id, "--by", "bob")  # not refused: the lease is free
    assert approved.code == 0, approved.err
    assert approved.out.startswith(f"approved {call_id} (write_file) of run {run_id}")
    assert "the prompt waiting on this run (avo-run:" in approved.err
    term.read_until(f"avo: call {call_id} was approved by bob via cli")
    assert term.finish() == 0, term.seen  # the waiting process continued the run itself
    assert (cli.cwd / "notes.md").read_text() == "hello\n"
    events = json.loads(cli("runs", "inspect", run_id, "--json").out)["events"]
    [received] = [e["payload"] for e in events if e["event_type"] == "human_input_received"]
    assert (received["by"], received["via"]) == ("bob", "cli")  # once, the shell's answer
    assert "stop reason: completed" in term.seen


def test_the_prompt_answers_first_and_the_late_shell_is_told(cli: CLI, store: str) -> None:
    term, run_id, call_id = _waiting_run(cli, store)
    term.send(b"n\r")
    assert term.finish() == 0, term.seen
    late = cli("runs", "approve", run_id)
    assert late.code == 2
    assert late.first_err == (
        f"avo: call {call_id} of run {run_id} was already denied by terminal: the user said no "
        "at the prompt; this answer was not recorded"
    )
    assert not (cli.cwd / "notes.md").exists()


def test_a_resume_from_another_shell_while_the_prompt_waits(cli: CLI, store: str) -> None:
    """The other shell drives the run on (here: it pauses again, nobody at its pipes); the
    waiting prompt notices, says so and stops without writing; the request stays open."""
    term, run_id, call_id = _waiting_run(cli, store)
    resumed = cli("runs", "resume", run_id)  # not refused: the prompt gave up the lease
    assert resumed.code == 3, resumed.out + resumed.err  # paused again: no terminal there
    written = json.loads(cli("runs", "inspect", run_id, "--json").out)["events"]
    term.read_until(f"avo: run {run_id} was resumed elsewhere; stopping here")
    assert term.finish() not in (0, 3), term.seen  # it failed: another process drives the run
    assert "was resumed by another process while this one waited" in term.seen
    events = json.loads(cli("runs", "inspect", run_id, "--json").out)["events"]
    assert not any(e["event_type"] == "human_input_received" for e in events)
    assert events == written  # the waiting process wrote nothing once it noticed
    [row] = json.loads(cli("runs", "list", "--pending", "--json").out)
    assert row["tool_call_id"] == call_id  # still waiting for the same answer
    assert cli("runs", "approve", run_id).code == 0
    assert cli("runs", "resume", run_id).code == 0
    assert (cli.cwd / "notes.md").read_text() == "hello\n"
