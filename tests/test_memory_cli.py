"""Two runs, two processes: the second answers from memory the first wrote (SQLite, PostgreSQL).

Each run is its own ``avo run`` process with ``--no-session`` (nothing of the
first run's conversation is carried over); the model is the real ``openai``
adapter talking to a loopback server that answers only from the messages it
is sent. It can name the port in the second run only if the memory recalled
from the store was in the request. ``avo memory forget`` then removes the
memory and a third run no longer knows.

On SQLite the first run's *final answer* is written back; on PostgreSQL the
model stores the fact with the ``remember`` tool.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from avo.models import TokenUsage
from avo.testing.providers import RecordedRequest, ScriptedHTTPServer, ScriptedResponse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from avo_process import drop_schema, openai_env, postgres_dsn_or_skip, run_avo  # noqa: E402

FACT = "The staging API listens on port 8443"


def answering(request: RecordedRequest) -> ScriptedResponse:
    """A model that knows only what its request holds; it keeps nothing between requests."""
    from avo_providers.wire_fakes import OpenAIWire

    body = request.json()
    usage = TokenUsage(input_tokens=30, output_tokens=5)
    wire = OpenAIWire()
    stream = bool(body.get("stream"))

    def answer(text: str) -> ScriptedResponse:
        return wire.text_stream(text, usage) if stream else wire.text(text, usage)

    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return answer("Noted.")
    task = str(last["content"])
    if task.startswith("Use the remember tool"):
        call = ("call_1", "remember", {"content": FACT, "tags": ["infra"]})
        return wire.tool_calls_stream([call], usage) if stream else wire.tool_calls([call], usage)
    if task.startswith("Note"):
        return answer(f"Noted: {FACT.lower()}.")
    if "which port" in task.lower():
        for message in messages:
            text = str(message.get("content"))
            if message["role"] == "system" and text.startswith("Relevant memories:"):
                found = re.search(r"port (\d+)", text)
                if found:
                    return answer(f"Port {found.group(1)}, from memory.")
        return answer("I do not know.")
    return answer("ok")


@pytest.fixture
def model() -> Iterator[ScriptedHTTPServer]:
    with ScriptedHTTPServer([answering] * 40) as server:
        yield server


def run_task(tmp_path: Path, env: dict[str, str], task: str) -> str:
    done = run_avo(tmp_path, env, "run", "-d", str(tmp_path / "avo.db"), "--no-session", task)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def memories(tmp_path: Path, env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    listed = run_avo(tmp_path, env, "memory", *args, "--json")
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout))


def two_runs_then_forget(tmp_path: Path, env: dict[str, str], first_task: str) -> None:
    assert run_task(tmp_path, env, "Which port does the staging API use?") == "I do not know."
    run_task(tmp_path, env, first_task)
    second = run_task(tmp_path, env, "Which port does the staging API use?")
    assert second == "Port 8443, from memory."

    found = memories(tmp_path, env, "search", "staging API port")
    assert found and "8443" in found[0]["content"]
    listed = memories(tmp_path, env, "list")
    assert all("sk-test-memory-key" not in m["content"] for m in listed)
    holding = [m["memory_id"] for m in listed if "8443" in m["content"]]
    assert holding
    # The plain listing shows short ids (like git's); forget takes them back.
    plain = run_avo(tmp_path, env, "memory", "list")
    shown = [line.split()[0] for line in plain.stdout.splitlines()]
    short = [next(s for s in shown if h.startswith(s)) for h in holding]
    assert all(len(s) < len(h) for s, h in zip(short, holding, strict=True))
    forgot = run_avo(tmp_path, env, "memory", "forget", *short)
    assert forgot.returncode == 0, forgot.stderr
    assert (
        forgot.stdout.strip() == f"forgot {len(holding)} memor{'y' if len(holding) == 1 else 'ies'}"
    )
    left = memories(tmp_path, env, "search", "staging API port")
    assert all("8443" not in m["content"] for m in left)
    assert run_task(tmp_path, env, "Which port does the staging API use?") == "I do not know."

    unknown = run_avo(tmp_path, env, "memory", "forget", "mnope123")
    assert unknown.returncode == 2
    assert "no memory 'mnope123' in this scope (workspace)" in unknown.stderr


def test_second_run_answers_from_memory_on_sqlite(
    tmp_path: Path, model: ScriptedHTTPServer
) -> None:
    (tmp_path / "avo.toml").write_text(
        '[memory]\nprovider = "sqlite"\nwrite = ["final_answer"]\n'
        '[memory.settings]\npath = "memory.db"\n'
    )
    env = openai_env(tmp_path, model, "sk-test-memory-key-0000")
    two_runs_then_forget(tmp_path, env, "Note this: the staging API listens on port 8443.")
    assert (tmp_path / "memory.db").is_file()
    # the request the second run sent held the memory; the transcript never did
    sent = [r.json() for r in model.requests]
    recalled = [
        body for body in sent if any("Relevant memories" in str(m) for m in body["messages"])
    ]
    assert recalled


def test_memory_commands_explain_bad_input(tmp_path: Path, model: ScriptedHTTPServer) -> None:
    env = openai_env(tmp_path, model, "sk-test-memory-key-0000")
    (tmp_path / "avo.toml").write_text('[memory]\nprovider = "lethe"\n')
    missing = run_avo(tmp_path, env, "memory", "list")
    assert missing.returncode == 2
    assert "no memory plugin named 'lethe' is installed; available: postgres, sqlite" in (
        missing.stderr
    )
    (tmp_path / "avo.toml").write_text('[memory]\nprovider = "sqlite"\nrecall = -1\n')
    bad = run_avo(tmp_path, env, "run", "-d", str(tmp_path / "avo.db"), "hello")
    assert bad.returncode == 2
    assert "memory.recall" in bad.stderr
    (tmp_path / "avo.toml").write_text("")
    empty = run_avo(tmp_path, env, "memory", "list")  # no [memory]: the default store, empty
    assert empty.returncode == 0
    assert "no memories in this scope yet" in empty.stderr
    assert (tmp_path / ".avo" / "memory.db").is_file()


@pytest.mark.postgres
def test_second_run_answers_from_memory_on_postgresql(
    tmp_path: Path, model: ScriptedHTTPServer
) -> None:
    dsn = postgres_dsn_or_skip()
    schema = f"avo_mem_{uuid.uuid4().hex[:12]}"
    (tmp_path / "avo.toml").write_text(
        '[permission]\nallow = ["remember"]\n'
        '[memory]\nprovider = "postgres"\nwrite = ["remember"]\n'
        f'[memory.settings]\ndsn = "{dsn}"\nschema = "{schema}"\n'
    )
    env = openai_env(tmp_path, model, "sk-test-memory-key-0000")
    try:
        two_runs_then_forget(tmp_path, env, "Use the remember tool to note the staging port.")
    finally:
        drop_schema(dsn, schema)
