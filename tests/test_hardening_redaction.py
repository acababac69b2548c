"""A key a vendor echoes never reaches any output, cut or whole (issue 13, item 9).

Provider error messages are shortened; they must be redacted *before* that, or
a key cut in half no longer matches and its first characters leak. And when a
provider's *successful* answer echoes a known key, it is masked in the stream,
the transcript (so every checkpoint), the events and the run record.

The provider is the real ``openai`` adapter talking to a real loopback HTTP
server; the CLI cases run ``avo run`` in a subprocess against a real SQLite file.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from avo_process import openai_env, run_avo  # noqa: E402

# Not key-shaped on purpose: only the known value (the env variable) can mask it.
KEY = "SEEDED7f3a9c2e5b1d4f6a8e0c2b4d6f8a1357"
FRAGMENT = KEY[:4]  # what a cut in the middle used to leave behind (or more)


def _stored_text(db: Path) -> str:
    """Every value in every table of the SQLite file, as one text."""
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        parts = []
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                parts.extend(
                    v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row
                )
    return "\n".join(parts)


def _echoing_error(offset: int) -> ScriptedResponse:
    """A 401 whose message holds the key starting ``offset`` characters into the detail."""
    kind = "invalid_request_error"
    padding = "x" * (offset - len(kind) - len(": Incorrect API key provided: "))
    message = f"Incorrect API key provided: {padding}{KEY}. Find your key at the dashboard."
    return ScriptedResponse.json({"error": {"message": message, "type": kind}}, status=401)


@pytest.mark.parametrize("offset", [280, 290, 295])
def test_a_key_cut_by_shortening_never_reaches_the_cli_or_the_store(
    tmp_path: Path, offset: int
) -> None:
    with ScriptedHTTPServer([_echoing_error(offset)]) as server:
        env = openai_env(tmp_path, server, KEY, provider=False)
        done = run_avo(tmp_path, env, "run", "say hi", "--provider", "openai", "-d", "runs.db")
    assert done.returncode == 1, done.stderr
    assert "HTTP 401" in done.stderr  # the summary (with the error) is on stderr
    for label, text in (("stdout", done.stdout), ("stderr", done.stderr)):
        assert FRAGMENT not in text, f"{label} leaks part of the key:\n{text}"
    stored = _stored_text(tmp_path / "runs.db")
    assert "HTTP 401" in stored  # MODEL_FAILED / RUN_FAILED / the run head are there
    assert FRAGMENT not in stored, "the store (events, run head, checkpoints) leaks the key"


def _answer(text: str, chunks: int = 1) -> ScriptedResponse:
    """A streamed OpenAI answer of ``text`` split into ``chunks`` deltas."""
    size = max(1, len(text) // chunks + 1)
    lines = [
        "data: "
        + json.dumps(
            {
                "id": "r1",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": text[i : i + size]}}],
            }
        )
        + "\n\n"
        for i in range(0, len(text), size)
    ]
    lines.append(
        "data: "
        + json.dumps(
            {
                "id": "r1",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
            }
        )
        + "\n\ndata: [DONE]\n\n"
    )
    return ScriptedResponse(
        status=200,
        content_type="text/event-stream",
        chunks=[line.encode() for line in lines],
    )


def test_an_answer_echoing_the_key_is_masked_in_the_stream_and_everything_kept(
    tmp_path: Path,
) -> None:
    answer = f"Your key is {KEY} and the token = load_token() line stays as written."
    with ScriptedHTTPServer([_answer(answer, chunks=9)]) as server:
        env = openai_env(tmp_path, server, KEY, provider=False)
        done = run_avo(
            tmp_path, env, "run", "what is my key?", "--provider", "openai", "-d", "r.db"
        )
    assert done.returncode == 0, done.stderr
    assert FRAGMENT not in done.stdout and FRAGMENT not in done.stderr, done.stdout
    assert "Your key is *** and the token = load_token() line stays as written." in done.stdout
    stored = _stored_text(tmp_path / "r.db")
    assert "Your key is ***" in stored
    assert FRAGMENT not in stored, "events, run head or a checkpoint keep the key"
