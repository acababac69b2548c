"""An MCP server's progress becomes ``tool_progress`` events in the run's log, written
while the call still runs, so a watcher (another process reading the store, the web
UI run page) sees it; replay leaves them out."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mcp_cli_kit import avo

from avo import AgentRuntime, EventType, FakeProvider, ModelResponse, RunState, ToolCall
from avo_mcp import ClientFeatures, MCPClient, MCPServer
from avo_sqlite import SQLiteEventStore

TESTS_DIR = Path(__file__).resolve().parent
SERVER = [sys.executable, str(TESTS_DIR / "sdk_server.py")]


def _script(name: str, arguments: dict[str, Any]) -> list[ModelResponse]:
    return [
        ModelResponse(tool_call=ToolCall(tool_call_id="c1", name=name, arguments=arguments)),
        ModelResponse(content="done"),
    ]


async def test_progress_is_in_the_log_while_the_call_runs(tmp_path: Path) -> None:
    db, flag = tmp_path / "runs.db", tmp_path / "go"
    shown: list[str] = []
    store = SQLiteEventStore(db)
    watcher = SQLiteEventStore(db)  # another reader of the same file
    server = MCPServer(
        command=SERVER,
        name="sdk",
        features=ClientFeatures(on_progress=lambda update: shown.append(update.describe())),
    )
    try:
        async with MCPClient(server) as client:
            runtime = AgentRuntime(
                provider=FakeProvider(_script("wait_for", {"path": str(flag)})),
                tools=client.tools(),
                event_store=store,
            )
            run = asyncio.create_task(runtime.run("wait", run_id="r1"))
            seen: list[Any] = []
            for _ in range(1200):  # the watcher sees 1/2 while the tool still waits
                events = await watcher.get_events("r1") if await watcher.get_run("r1") else []
                seen = [e for e in events if e.event_type is EventType.TOOL_PROGRESS]
                if seen or run.done():
                    break
                await asyncio.sleep(0.05)
            assert not run.done(), "the call ended before its progress was seen"
            assert [e.payload["progress"] for e in seen] == [1.0]
            assert seen[0].payload == {
                "tool_call_id": seen[0].payload["tool_call_id"],
                "name": "wait_for",
                "progress": 1.0,
                "total": 2.0,
                "message": "waiting for the file",
            }
            flag.touch()
            result = await run
        assert result.status is RunState.COMPLETED
        events = await store.get_events("r1")
        kinds = [e.event_type for e in events]
        started, finished = (
            kinds.index(EventType.TOOL_STARTED),
            kinds.index(EventType.TOOL_COMPLETED),
        )
        progress = [e for e in events if e.event_type is EventType.TOOL_PROGRESS]
        assert [p.payload["message"] for p in progress] == ["waiting for the file", "found it"]
        assert all(started < events.index(p) < finished for p in progress)
        assert shown == ["sdk/wait_for: 1/2 waiting for the file", "sdk/wait_for: 2/2 found it"]
    finally:
        await watcher.close()
        await store.close()


PROGRESS_CONFIG = """
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "sdk__count", arguments = {{to = 40}}}}
[[provider.settings.script]]
content = "counted"

[store]
location = "runs.db"

[permission]
mode = "bypass_permissions"

[mcp]
user_servers = false
progress = "log"
[mcp.servers.sdk]
command = {command}
"""


def test_a_chatty_server_is_throttled_and_the_last_word_is_kept(tmp_path: Path) -> None:
    (tmp_path / "avo.toml").write_text(
        PROGRESS_CONFIG.format(command=json.dumps(SERVER)), encoding="utf-8"
    )
    done = avo(tmp_path, "run", "count", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    trace = avo(tmp_path, "runs", "inspect", run_id, "--json")
    assert trace.returncode == 0, trace.stderr
    text = trace.stdout
    assert "tool_progress" in text
    assert "step 1" in text and "step 40" in text  # the first at once, the newest at the end
    shown = avo(tmp_path, "runs", "inspect", run_id).stdout  # the table a person reads
    assert "sdk__count [" in shown and "progress 1/40 step 1" in shown
    assert "progress 40/40 step 40" in shown
    replayed = avo(tmp_path, "replay", run_id)  # progress is not compared by replay
    assert replayed.returncode == 0 and " ok " in replayed.stdout, replayed.stdout + replayed.stderr
