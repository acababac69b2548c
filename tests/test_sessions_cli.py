"""Three runs of one session: the third answers from what the first learned (SQLite, PostgreSQL).

Each run is a separate ``avo run`` process; the model is the real ``openai``
adapter talking to a loopback HTTP server that answers only from the
messages it is sent, so it can recall the code word only if the session
carried the first run's conversation into the third run's request.
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


def remembering(request: RecordedRequest) -> ScriptedResponse:
    """Answers from the conversation it is sent; it keeps nothing between requests."""
    from avo_providers.wire_fakes import OpenAIWire

    body = request.json()
    usage = TokenUsage(input_tokens=20, output_tokens=3)

    def answer(text: str) -> ScriptedResponse:
        wire = OpenAIWire()
        return wire.text_stream(text, usage) if body.get("stream") else wire.text(text, usage)

    messages = body["messages"]
    task = str(messages[-1]["content"])
    if task.startswith("remember"):
        return answer("noted")
    if "code word" in task:
        for message in messages:
            found = re.search(r"the code word is (\w+)", str(message.get("content")))
            if found:
                return answer(found.group(1))
        return answer("I do not know")
    return answer("ok")


@pytest.fixture
def model() -> Iterator[ScriptedHTTPServer]:
    with ScriptedHTTPServer([remembering] * 20) as server:
        yield server


def three_runs(tmp_path: Path, env: dict[str, str], *store: str) -> list[Any]:
    first = run_avo(tmp_path, env, "run", *store, "remember: the code word is tangerine")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "noted"
    second = run_avo(tmp_path, env, "run", *store, "--continue", "what is 2 + 2?")
    assert second.returncode == 0, second.stderr
    third = run_avo(tmp_path, env, "run", *store, "--continue", "what was the code word?")
    assert third.returncode == 0, third.stderr
    assert third.stdout.strip() == "tangerine"
    assert "avo: session " in third.stderr and "avo run --continue" in third.stderr
    alone = run_avo(tmp_path, env, "run", *store, "--no-session", "what was the code word?")
    assert alone.stdout.strip() == "I do not know"
    listed = run_avo(tmp_path, env, "sessions", *store, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert len(sessions) == 1, listed.stdout + listed.stderr
    assert len(sessions[0]["run_ids"]) == 3
    assert sessions[0]["title"] == "remember: the code word is tangerine"
    shown = run_avo(tmp_path, env, "sessions", *store, "show", "latest")
    assert shown.returncode == 0, shown.stderr
    assert "tangerine" in shown.stdout and "completed" in shown.stdout
    return sessions


def test_three_runs_of_one_session_on_sqlite(tmp_path: Path, model: ScriptedHTTPServer) -> None:
    env = openai_env(tmp_path, model, "sk-test")
    three_runs(tmp_path, env, "-d", str(tmp_path / "avo.db"))
    missing = run_avo(
        tmp_path, env, "run", "-d", str(tmp_path / "avo.db"), "--session", "a b", "hi"
    )
    assert missing.returncode == 2
    assert "invalid session id 'a b'" in missing.stderr


@pytest.mark.postgres
def test_three_runs_of_one_session_on_postgresql(tmp_path: Path, model: ScriptedHTTPServer) -> None:
    dsn = postgres_dsn_or_skip()
    schema = f"avo_test_{uuid.uuid4().hex[:12]}"
    (tmp_path / "avo.toml").write_text(
        f'[store]\nlocation = "{dsn}"\n[store.settings]\nschema = "{schema}"\n'
    )
    env = openai_env(tmp_path, model, "sk-test")
    try:
        three_runs(tmp_path, env)
    finally:
        drop_schema(dsn, schema)
