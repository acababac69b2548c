"""A 300-turn run against a model with an 8k-token window: compacted, recalled, resumed.

The model is the real ``openai`` adapter talking to a loopback server that
refuses (HTTP 400, ``context_length_exceeded``) any request over 8,192 tokens,
measured on the JSON it receives. The run reads 300 chunks of ~250 tokens each
(about nine windows in all). Mid-run, once it has read chunk 200, the worker
process is killed (SIGKILL) while its request is in flight; a new process
resumes the run from its SQLite file and must send that same request again,
with the same compacted view.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from avo import EventType
from avo.models import TokenUsage
from avo.testing.providers import RecordedRequest, ScriptedHTTPServer, ScriptedResponse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import long_run_worker as worker  # noqa: E402

KILL_AT = 200
RECALL_AFTER = 150


class Model:
    """The server side: answers from each request alone, enforcing the window."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.bodies: list[dict[str, Any]] = []
        self.victim: subprocess.Popen[str] | None = None
        self.killed_body: dict[str, Any] | None = None
        self.recalled: list[str] = []
        self.summaries = 0
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ScriptedResponse:
        from avo_providers.wire_fakes import OpenAIWire

        wire = OpenAIWire()
        body = request.json()
        size = (len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools", [])))) // 4
        usage = TokenUsage(input_tokens=size, output_tokens=10)  # what it counted, as vendors do
        with self.lock:
            self.sizes.append(size)
            self.bodies.append(body)
        if size > worker.WINDOW:
            return wire.error(
                400,
                f"This model's maximum context length is {worker.WINDOW} tokens; "
                f"your messages resulted in {size} tokens (context_length_exceeded)",
            )
        messages = body["messages"]
        if str(messages[0].get("content", "")).startswith("You compact the history"):
            self.summaries += 1
            shown = messages[-1]["content"]
            pattern = r'"n":\s*(\d+)|chunk (\d+):|chunks 0 to (\d+) have'
            seen = [int(g) for groups in re.findall(pattern, shown) for g in groups if g]
            return wire.text(f"So far chunks 0 to {max(seen, default=-1)} have been read.", usage)
        highest = _highest(messages)
        last = messages[-1]
        if last.get("role") == "tool" and str(last.get("content")).startswith("Recalled output"):
            self.recalled.append(str(last["content"]))
        if highest == KILL_AT and self.victim is not None and self.killed_body is None:
            self.killed_body = body
            self.victim.send_signal(signal.SIGKILL)
            self.victim.wait()
            return wire.text("(nobody is listening)", usage)
        if not self.recalled and highest >= RECALL_AFTER:
            stubs = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
            found = re.search(r'recall with id "([^"]+)"', "\n".join(stubs))
            if found:
                return wire.tool_call("call-recall", "recall", {"id": found.group(1)}, usage)
        if highest >= worker.CHUNKS - 1:
            return wire.text(f"read {worker.CHUNKS} chunks", usage)
        nxt = highest + 1
        return wire.tool_call(f"call-{nxt}", "read_chunk", {"n": nxt}, usage)


def _highest(messages: list[dict[str, Any]]) -> int:
    """The highest chunk the conversation shows was asked for (calls, then summaries)."""
    highest = -1
    for message in messages:
        for call in message.get("tool_calls") or ():
            if call["function"]["name"] == "read_chunk":
                highest = max(highest, int(json.loads(call["function"]["arguments"])["n"]))
        summary = re.search(r"chunks 0 to (\d+) have been read", str(message.get("content")))
        if summary:
            highest = max(highest, int(summary.group(1)))
    return highest


def _worker(mode: str, db: Path, url: str, run_id: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    return subprocess.Popen(
        [sys.executable, str(HERE / "long_run_worker.py"), mode, str(db), url, run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_300_turns_in_an_8k_window_with_compaction_recall_and_resume(tmp_path: Path) -> None:
    model = Model()
    db = tmp_path / "long.db"
    with ScriptedHTTPServer([model] * 2_000) as server:
        url = server.url + "/v1"
        first = _worker("run", db, url, "long-run")
        model.victim = first
        out, err = first.communicate(timeout=600)
        assert first.returncode == -signal.SIGKILL, err[-3000:]
        assert model.killed_body is not None
        killed_at = len(model.bodies)
        second = _worker("resume", db, url, "long-run")
        out, err = second.communicate(timeout=600)
        assert second.returncode == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result["status"] == "completed", result
    assert result["output"] == f"read {worker.CHUNKS} chunks"
    # no request ever went over the window, though the transcript is many windows long
    assert max(model.sizes) <= worker.WINDOW
    # the resumed process sent the interrupted request again, with the same compacted view
    resumed = next(b for b in model.bodies[killed_at:] if b.get("tools"))
    assert resumed["messages"] == model.killed_body["messages"]
    # a recall brought an elided output back in full
    assert model.recalled
    n = int(re.search(r"chunk (\d+):", model.recalled[0]).group(1))  # type: ignore[union-attr]
    assert worker.chunk_text(n) in model.recalled[0]
    assert model.summaries >= 2

    events, transcript = asyncio.run(_read(db))
    kinds = [e.event_type for e in events]
    compactions = [e.payload for e in events if e.event_type is EventType.CONTEXT_COMPACTED]
    assert {c["stage"] for c in compactions} >= {"elide", "summary"}
    assert EventType.RUN_RESUMED in kinds
    assert not any(
        "context length" in str(e.payload.get("error"))
        for e in events
        if e.event_type is EventType.MODEL_FAILED
    )
    assert sum(1 for e in events if e.event_type is EventType.TOOL_COMPLETED) >= worker.CHUNKS
    # the full transcript is still in the store: every chunk, verbatim
    outputs = {m["content"] for m in transcript if m.get("role") == "tool"}
    assert all(worker.chunk_text(i) in outputs for i in range(worker.CHUNKS))


async def _read(db: Path) -> tuple[list[Any], list[dict[str, Any]]]:
    from avo_sqlite import SQLiteEventStore

    store = SQLiteEventStore(db)
    try:
        events = await store.get_events("long-run")
        checkpoint = await store.get_latest_checkpoint("long-run")
        assert checkpoint is not None
        return events, checkpoint.messages
    finally:
        await store.close()
