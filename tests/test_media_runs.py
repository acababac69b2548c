"""Images and documents survive a pause and a resume in another process, on SQLite and PostgreSQL.

The bytes live once in the store's blob table; events and checkpoints hold
``sha256:`` references; a runtime built over a fresh connection to the same
store reads them back for the request it sends after the resume.
"""

from __future__ import annotations

import base64
import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, RunState
from avo.blobs import blob_id
from avo.content_blocks import DocumentBlock, ImageBlock
from avo.models import ModelResponse, ToolCall, ToolRisk
from avo.ops.approval import answer
from avo.ops.replay import replay

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from avo_process import drop_schema_async, postgres_dsn  # noqa: E402

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


class AskArgs(BaseModel):
    question: str


def _ask_tool() -> FunctionTool[AskArgs]:
    def never(args: AskArgs) -> None:
        raise AssertionError("a person answers ask_user")

    return FunctionTool(
        name="ask_user",
        description="Ask the user.",
        arguments_model=AskArgs,
        function=never,
        risk=ToolRisk.INSPECT,
        asks_human=True,
    )


SCRIPT = [
    ModelResponse(tool_call=ToolCall(name="ask_user", arguments={"question": "which page?"})),
    ModelResponse(content="page one shows a pixel"),
]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def open_store(request: Any, tmp_path: Path) -> AsyncIterator[Any]:
    """A function opening a new connection to one store each time it is called."""
    opened: list[Any] = []
    if request.param == "sqlite":
        from avo_sqlite import SQLiteEventStore

        def make() -> Any:
            store = SQLiteEventStore(tmp_path / "avo.db")
            opened.append(store)
            return store

        yield make
    else:
        dsn = postgres_dsn()
        if dsn is None:
            pytest.skip("no PostgreSQL test server: run scripts/ensure-services.sh")
        from avo_postgres import PostgresEventStore

        schema = f"avo_test_{uuid.uuid4().hex[:12]}"

        def make() -> Any:
            store = PostgresEventStore(dsn, schema=schema)
            opened.append(store)
            return store

        yield make
        await drop_schema_async(dsn, schema)
    for store in opened:
        await store.close()


async def _store_text(store: Any, run_id: str) -> str:
    events = await store.get_events(run_id)
    checkpoint = await store.get_latest_checkpoint(run_id)
    return json.dumps([e.payload for e in events]) + json.dumps(checkpoint.messages)


async def test_attachments_survive_a_pause_and_a_resume_from_a_new_connection(
    open_store: Any,
) -> None:
    first_store = open_store()
    if hasattr(first_store, "connect"):
        await first_store.connect()
    first = FakeProvider(SCRIPT)
    runtime = AgentRuntime(provider=first, tools=[_ask_tool()], event_store=first_store)
    paused = await runtime.run(
        "read the report",
        attachments=[
            ImageBlock.from_bytes(PNG, "image/png", name="cover.png"),
            DocumentBlock.from_bytes(PDF, "application/pdf", name="report.pdf"),
        ],
    )
    assert paused.status is RunState.PAUSED
    stored = await _store_text(first_store, paused.run_id)
    assert base64.b64encode(PNG).decode() not in stored
    assert base64.b64encode(PDF).decode() not in stored
    assert blob_id(PNG) in stored and blob_id(PDF) in stored
    await answer(first_store, paused.run_id, "the first")
    await first_store.close()

    second_store = open_store()
    if hasattr(second_store, "connect"):
        await second_store.connect()
    assert await second_store.get_blob(blob_id(PNG)) == PNG
    second = FakeProvider(SCRIPT)
    resumed = AgentRuntime(provider=second, tools=[_ask_tool()], event_store=second_store)
    result = await resumed.resume(paused.run_id)
    assert result.status is RunState.COMPLETED
    [request] = second.requests
    content = request.messages[0]["content"]
    assert content[1]["data"] == base64.b64encode(PNG).decode()  # type: ignore[index]
    assert content[2]["data"] == base64.b64encode(PDF).decode()  # type: ignore[index]
    assert content[2]["name"] == "report.pdf"  # type: ignore[index]
    # Replay gives the recorded attachments (blob references) back to the replayed
    # run, so the replayed request and events match the recording.
    report = await replay(second_store, paused.run_id)
    assert report.ok, report.divergence
