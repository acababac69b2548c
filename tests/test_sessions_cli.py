"""Three runs of one session: the third answers from what the first learned (SQLite, PostgreSQL).

Each run is a separate ``avo run`` process; the model is the real ``openai``
adapter talking to a loopback HTTP server that answers only from the
messages it is sent, so it can recall the code word only if the session
carried the first run's conversation into the third run's request.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from avo.models import TokenUsage
from avo.testing.providers import RecordedRequest, ScriptedHTTPServer, ScriptedResponse

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


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


def environment(tmp_path: Path, server: ScriptedHTTPServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    env.update(
        {
            "AVO_PROVIDER": "openai",
            "AVO_OPENAI_API_KEY": "sk-test",
            "AVO_OPENAI_BASE_URL": server.url + "/v1",
            "AVO_OPENAI_MODEL": "gpt-test",
            "AVO_PLUGINS_CACHE": "0",
            "HOME": str(tmp_path),
        }
    )
    return env


def avo(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "avo.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


def three_runs(tmp_path: Path, env: dict[str, str], *store: str) -> list[Any]:
    first = avo(tmp_path, env, "run", *store, "remember: the code word is tangerine")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "noted"
    second = avo(tmp_path, env, "run", *store, "--continue", "what is 2 + 2?")
    assert second.returncode == 0, second.stderr
    third = avo(tmp_path, env, "run", *store, "--continue", "what was the code word?")
    assert third.returncode == 0, third.stderr
    assert third.stdout.strip() == "tangerine"
    assert "avo: session " in third.stderr and "avo run --continue" in third.stderr
    alone = avo(tmp_path, env, "run", *store, "--no-session", "what was the code word?")
    assert alone.stdout.strip() == "I do not know"
    listed = avo(tmp_path, env, "sessions", *store, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert len(sessions) == 1, listed.stdout + listed.stderr
    assert len(sessions[0]["run_ids"]) == 3
    assert sessions[0]["title"] == "remember: the code word is tangerine"
    shown = avo(tmp_path, env, "sessions", *store, "show", "latest")
    assert shown.returncode == 0, shown.stderr
    assert "tangerine" in shown.stdout and "completed" in shown.stdout
    return sessions


def test_three_runs_of_one_session_on_sqlite(tmp_path: Path, model: ScriptedHTTPServer) -> None:
    env = environment(tmp_path, model)
    three_runs(tmp_path, env, "-d", str(tmp_path / "avo.db"))
    missing = avo(tmp_path, env, "run", "-d", str(tmp_path / "avo.db"), "--session", "a b", "hi")
    assert missing.returncode == 2
    assert "invalid session id 'a b'" in missing.stderr


@pytest.mark.postgres
def test_three_runs_of_one_session_on_postgresql(tmp_path: Path, model: ScriptedHTTPServer) -> None:
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip() or (
        DSN_FILE.read_text().strip() if DSN_FILE.is_file() else ""
    )
    if not dsn:
        pytest.skip("no PostgreSQL test server: run scripts/ensure-services.sh")
    schema = f"avo_test_{uuid.uuid4().hex[:12]}"
    (tmp_path / "avo.toml").write_text(
        f'[store]\nlocation = "{dsn}"\n[store.settings]\nschema = "{schema}"\n'
    )
    env = environment(tmp_path, model)
    try:
        three_runs(tmp_path, env)
    finally:
        import asyncio

        import asyncpg

        async def drop() -> None:
            conn = await asyncpg.connect(dsn)
            try:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            finally:
                await conn.close()

        asyncio.run(drop())
