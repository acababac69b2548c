"""Conformance of a store's own run listings (:class:`avo.storage.queries.RunQueryStore`).

A store that answers :class:`~avo.storage.queries.RunQuery` itself must give
exactly the pages the scanning fallback gives: the same runs, in the same
order, the same totals (or None), every run once across pages. Subclass
:class:`RunQueryConformance` (class name starting with ``Test``) and provide
a ``store`` fixture (an :class:`~avo.testing.stores.EventStoreConformance`
subclass already does); the tests are skipped for a store without the
capability.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from avo.models import ModelResponse, TokenUsage, ToolCall
from avo.state import RunState, StopReason
from avo.storage.queries import RunQuery, RunQueryStore, page_of, scan_summaries


class _Args(BaseModel):
    n: int = 0


async def _fill(store: Any) -> list[str]:
    """Nine runs: three tasks (with LIKE wildcards in them), tools in three, two models."""
    from avo import AgentRuntime, FakeProvider, FunctionTool

    tool = FunctionTool(
        name="count", description="count", arguments_model=_Args, function=lambda a: a.n
    )
    made = []
    for index in range(9):
        usage = TokenUsage(input_tokens=100 * (index + 1), output_tokens=10)
        script = [ModelResponse(content=f"answer {index}", usage=usage)]
        if index % 3 == 0:
            call = ToolCall(name="count", arguments={"n": index})
            script.insert(0, ModelResponse(tool_call=call, usage=usage))
        provider = FakeProvider(script)
        provider.model = "alpha" if index % 2 else "beta"
        runtime = AgentRuntime(provider=provider, tools=[tool], event_store=store)
        task = ["Fix the 100% tests", "write_docs for v2", "Refactor the parser"][index % 3]
        made.append((await runtime.run(f"{task} #{index}")).run_id)
    return made


class RunQueryConformance:
    """What a store's ``query_runs`` must answer (the scanning fallback's pages)."""

    @pytest.fixture
    async def filled(self, store: Any) -> Any:
        if not isinstance(store, RunQueryStore):
            pytest.skip(f"{type(store).__name__} does not answer run queries itself")
        await _fill(store)
        return store

    async def _compare(self, store: Any, query: RunQuery) -> list[str]:
        summaries = await scan_summaries(store)
        ids: list[str] = []
        cursor_own: str | None = None
        cursor_ref: str | None = None
        while True:
            own = await store.query_runs(query.next_page(cursor_own))
            ref = page_of(summaries, query.next_page(cursor_ref))
            assert [s.run_id for s in own.runs] == [s.run_id for s in ref.runs], query
            if own.total is not None:
                assert own.total == ref.total, query
            for mine, theirs in zip(own.runs, ref.runs, strict=True):
                assert mine.facets.to_dict() == theirs.facets.to_dict()
            ids += [s.run_id for s in own.runs]
            assert (own.next_cursor is None) == (ref.next_cursor is None), query
            if own.next_cursor is None:
                break
            cursor_own, cursor_ref = own.next_cursor, ref.next_cursor
        assert len(ids) == len(set(ids))
        return ids

    async def test_listing_pages_match_the_scan(self, filled: Any) -> None:
        everything = await self._compare(filled, RunQuery(limit=4))
        assert len(everything) == 9
        first = await filled.query_runs(RunQuery(limit=4))
        assert first.total == 9

    async def test_head_filters_match_the_scan(self, filled: Any) -> None:
        run = (await filled.list_runs())[3]
        for query in (
            RunQuery(text="fix", limit=2),
            RunQuery(text="100%"),
            RunQuery(text="WRITE_DOCS"),
            RunQuery(text="_"),
            RunQuery(text=run.run_id[:6]),
            RunQuery(states=(RunState.COMPLETED,), limit=3),
            RunQuery(states=(RunState.FAILED, RunState.CANCELLED)),
            RunQuery(stop_reasons=(StopReason.COMPLETED,), limit=5),
            RunQuery(created_after=run.created_at),
            RunQuery(created_before=run.created_at + timedelta(microseconds=1), limit=2),
        ):
            await self._compare(filled, query)

    async def test_facet_filters_match_the_scan(self, filled: Any) -> None:
        rates = {("fake", "alpha"): (Decimal("1"), Decimal("1"))}
        assert await self._compare(filled, RunQuery(tool="count", limit=2))
        assert await self._compare(filled, RunQuery(model="alpha", limit=3))
        assert await self._compare(filled, RunQuery(text="refactor", model="beta"))
        await self._compare(filled, RunQuery(min_cost=Decimal("0.5"), rates=rates, limit=2))
        assert await self._compare(filled, RunQuery(provider="fake", limit=4))
        assert not await self._compare(filled, RunQuery(tool="nope"))

    async def test_facet_values_name_what_is_there(self, filled: Any) -> None:
        values = await filled.run_facet_values()
        assert values.tools == ["count"]
        assert {m for _, m in values.models} == {"alpha", "beta"}
        assert "completed" in values.stop_reasons


__all__ = ["RunQueryConformance"]
