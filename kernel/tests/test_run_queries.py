"""``avo.storage.queries``: filtered, keyset-paginated run listings (the scanning fallback)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, ModelResponse, ToolCall
from avo.exceptions import StorageError
from avo.models import TokenUsage
from avo.state import RunState, StopReason
from avo.storage.memory import InMemoryEventStore
from avo.storage.queries import (
    RunQuery,
    decode_cursor,
    encode_cursor,
    query_runs,
    run_facet_values,
    run_summary,
)


class NArgs(BaseModel):
    n: int = 0


ECHO = FunctionTool(
    name="echo", description="echo n", arguments_model=NArgs, function=lambda a: {"n": a.n}
)


async def _run(store: InMemoryEventStore, task: str, *, tool: bool = False) -> str:
    usage = TokenUsage(input_tokens=1000, output_tokens=100)
    script = [ModelResponse(content="done", usage=usage)]
    if tool:
        script.insert(0, ModelResponse(tool_call=ToolCall(name="echo", arguments={}), usage=usage))
    runtime = AgentRuntime(provider=FakeProvider(script), tools=[ECHO], event_store=store)
    return (await runtime.run(task)).run_id


async def _all_ids(store: InMemoryEventStore, query: RunQuery) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    while True:
        page = await query_runs(store, query.next_page(cursor))
        ids += [row.run_id for row in page.runs]
        cursor = page.next_cursor
        if cursor is None:
            return ids


async def test_pages_walk_every_match_newest_first_once() -> None:
    store = InMemoryEventStore()
    made = [await _run(store, f"task {i}", tool=i % 3 == 0) for i in range(7)]
    ids = await _all_ids(store, RunQuery(limit=3))
    assert ids == list(reversed(made))
    first = await query_runs(store, RunQuery(limit=3))
    assert first.total == 7 and len(first.runs) == 3 and first.next_cursor


async def test_filters_text_state_tool_model_and_cost() -> None:
    store = InMemoryEventStore()
    plain = await _run(store, "Write the README")
    tooled = await _run(store, "fix the tests", tool=True)
    assert await _all_ids(store, RunQuery(text="readme")) == [plain]
    assert await _all_ids(store, RunQuery(text=tooled[:8])) == [tooled]
    assert await _all_ids(store, RunQuery(tool="echo")) == [tooled]
    assert await _all_ids(store, RunQuery(states=(RunState.COMPLETED,))) == [tooled, plain]
    assert await _all_ids(store, RunQuery(stop_reasons=(StopReason.USER_CANCELLED,))) == []
    summary = await run_summary(store, tooled)
    assert summary is not None and summary.facets.tools == {"echo": 1}
    provider, model = summary.facets.provider, summary.facets.model
    assert provider and model
    assert await _all_ids(store, RunQuery(model=model)) == [tooled, plain]
    rates = {(provider, model): (Decimal("1"), Decimal("10"))}  # USD per 1,000 tokens
    assert summary.cost(rates) == Decimal("4")  # 2 calls x (1 + 1)
    assert await _all_ids(store, RunQuery(min_cost=Decimal("3"), rates=rates)) == [tooled]
    assert await _all_ids(store, RunQuery(max_cost=Decimal("3"), rates=rates)) == [plain]
    assert await _all_ids(store, RunQuery(min_cost=Decimal("0"))) == []  # no rate: no cost
    values = await run_facet_values(store)
    assert values.tools == ["echo"] and (provider, model) in values.models


async def test_dates_and_bad_input() -> None:
    store = InMemoryEventStore()
    run_id = await _run(store, "dated")
    now = datetime.now(UTC)
    assert await _all_ids(store, RunQuery(created_after=now - timedelta(hours=1))) == [run_id]
    assert await _all_ids(store, RunQuery(created_before=now - timedelta(hours=1))) == []
    with pytest.raises(StorageError, match="timezone-aware"):
        RunQuery(created_after=datetime(2026, 1, 1))
    with pytest.raises(StorageError, match="1 to 500 runs, not 0"):
        RunQuery(limit=0)
    with pytest.raises(StorageError, match="not a cursor of this listing"):
        await query_runs(store, RunQuery(cursor="garbage!"))
    moment = datetime(2026, 5, 1, tzinfo=UTC)
    assert decode_cursor(encode_cursor(moment, 12)) == (moment, 12)
