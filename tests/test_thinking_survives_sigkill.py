"""Reasoning the vendor signed survives SIGKILL and a resume through the SQLite store.

A real process runs an Anthropic-style (or Gemini, or OpenAI Responses) run on a
loopback server: the model thinks (signed thinking blocks, a redacted block,
Gemini's thoughtSignature, or a Responses reasoning item's encrypted_content)
and calls a tool; the process is SIGKILLed while its second
model call is in flight. Another process resumes the run from the store alone
and asks again: the vendor must get its reasoning back byte for byte. The
thinking text mentions a token and a password on purpose: the store's
redaction of secret-shaped text must not touch signed content, or the vendor
rejects the turn.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from avo.models import TokenUsage
from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse
from avo_providers.wire_fakes import AnthropicWire, GeminiWire, ResponsesWire

WORKER = Path(__file__).with_name("thinking_worker.py")
USAGE = TokenUsage(input_tokens=8, output_tokens=3)
SIGNATURE = base64.b64encode(bytes(range(256)) * 2).decode()  # '+', '/', '=' and 680 chars
THINKING = [
    {
        "type": "thinking",
        "thinking": "Use the token: abc123def456 and password=hunter2! to look up Oslo.",
        "signature": SIGNATURE,
    },
    {"type": "redacted_thinking", "data": base64.b64encode(b"sk-ant-" + bytes(300)).decode()},
]


def worker(mode: str, style: str, db: Path, url: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    return subprocess.Popen(
        [sys.executable, str(WORKER), mode, style, str(db), url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def kill_during_second_call(
    style: str, tmp_path: Path, first: ScriptedResponse, final: ScriptedResponse
) -> list[dict[str, Any]]:
    hang = ScriptedResponse.json({}, status=500)
    hang.delay_seconds = 60  # the second call never answers before the kill
    db = tmp_path / "runs.db"
    with ScriptedHTTPServer([first, hang, final]) as server:
        process = worker("run", style, db, server.url)
        deadline = time.monotonic() + 60
        while len(server.requests) < 2:
            if process.poll() is not None:
                raise AssertionError(process.communicate())
            assert time.monotonic() < deadline, "the run never made its second model call"
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        resumed = worker("resume", style, db, server.url)
        out, err = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, err
        assert out.startswith("completed Clear."), (out, err)
    assert len(server.requests) == 3
    return [request.json() for request in server.requests]


@pytest.mark.parametrize("style", ["anthropic", "minimax-anthropic"])
def test_signed_thinking_goes_back_after_sigkill_and_resume(style: str, tmp_path: Path) -> None:
    wire = AnthropicWire()
    first = wire.tool_calls([("toolu_1", "get_weather", {"city": "Oslo"})], USAGE, THINKING)
    _, before_kill, after_resume = kill_during_second_call(
        style, tmp_path, first, wire.text("Clear.", USAGE)
    )
    for sent in (before_kill, after_resume):
        assistant = sent["messages"][-2]
        assert assistant["role"] == "assistant"
        assert assistant["content"][:2] == THINKING  # unchanged, signatures intact
        assert assistant["content"][2]["id"] == "toolu_1"
        assert sent["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"
    assert after_resume["messages"] == before_kill["messages"]


def test_gemini_thought_signature_goes_back_after_sigkill_and_resume(tmp_path: Path) -> None:
    wire = GeminiWire()
    first = wire.tool_calls([("", "get_weather", {"city": "Oslo"})], USAGE, signature=SIGNATURE)
    _, before_kill, after_resume = kill_during_second_call(
        "gemini", tmp_path, first, wire.text("Clear.", USAGE)
    )
    assert after_resume["contents"] == before_kill["contents"]
    assert after_resume["contents"][-2]["parts"][0]["thoughtSignature"] == SIGNATURE


def test_openai_reasoning_items_go_back_after_sigkill_and_resume(tmp_path: Path) -> None:
    wire = ResponsesWire()
    item = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": THINKING[0]["thinking"]}],
        "encrypted_content": SIGNATURE,
    }
    first = wire.tool_calls([("call_1", "get_weather", {"city": "Oslo"})], USAGE, [item])
    _, before_kill, after_resume = kill_during_second_call(
        "openai-responses", tmp_path, first, wire.text("Clear.", USAGE)
    )
    assert after_resume["input"] == before_kill["input"]
    assert after_resume["input"][-3] == item  # summary and encrypted_content unchanged
    assert after_resume["input"][-2]["call_id"] == "call_1"
    assert after_resume["input"][-2]["id"] == "fc_0"  # paired with the reasoning item
    assert after_resume["store"] is False and "previous_response_id" not in after_resume
