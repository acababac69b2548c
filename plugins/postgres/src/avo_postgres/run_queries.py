"""Run listings for front ends: avo-postgres's answer to ``avo.storage.queries.RunQuery``.

The same plan as avo-sqlite's: head filters (text, states, stop reasons,
creation dates), the keyset page and the total are SQL on ``avo_runs``
(newest first on the ``avo_runs_newest`` index); facets are folded only for
the page's runs, from the events they come from, in one query for the whole
page. Facet filters (provider, model, tool, session, cost) walk the
head-filtered runs in batches, folding each batch's facets, until the page is
full; their total is left unknown (None).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from avo.events import AgentEvent, EventType
from avo.exceptions import StorageError
from avo.storage.queries import (
    FacetValues,
    RunFacets,
    RunPage,
    RunQuery,
    RunSummary,
    decode_cursor,
    encode_cursor,
    facet_values,
)
from avo_postgres.rows import decode_record

FACET_SAMPLE = 200
"""How many of the newest runs the filter pickers' values are gathered from."""
_BATCH = 200
_FACET_TYPES = [
    EventType.RUN_CREATED.value,
    EventType.MODEL_RESPONDED.value,
    EventType.TOOL_REQUESTED.value,
    EventType.HUMAN_INPUT_REQUESTED.value,
    EventType.HUMAN_INPUT_RECEIVED.value,
]


@dataclass
class _Slim:
    """What RunFacets reads of an event."""

    sequence: int
    event_type: EventType
    payload: dict[str, Any]


def _needs_facets(query: RunQuery) -> bool:
    return any(
        value is not None for value in (query.provider, query.model, query.tool, query.session_id)
    ) or (query.min_cost is not None or query.max_cost is not None)


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class _Sql:
    """A WHERE clause with numbered parameters."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, *values: Any) -> None:
        marks = [f"${len(self.params) + i + 1}" for i in range(len(values))]
        self.clauses.append(clause.format(*marks))
        self.params.extend(values)

    @property
    def where(self) -> str:
        return " AND ".join(self.clauses) or "true"


def _heads(query: RunQuery, *, cursor: bool) -> _Sql:
    sql = _Sql()
    needle = query.text_needle
    if needle is not None:
        sql.add(
            "(strpos(lower(record->>'task'), {0}) > 0 OR lower(run_id) LIKE {1} ESCAPE '\\')",
            needle,
            _like_prefix(needle),
        )
    if query.states:
        sql.add("state = ANY({0})", [state.value for state in query.states])
    if query.stop_reasons:
        sql.add("record->>'stop_reason' = ANY({0})", [r.value for r in query.stop_reasons])
    if query.created_after is not None:
        sql.add("created_at >= {0}", query.created_after)
    if query.created_before is not None:
        sql.add("created_at < {0}", query.created_before)
    if cursor and query.cursor is not None:
        moment, order = decode_cursor(query.cursor)
        if not isinstance(order, int):
            raise StorageError(
                f"{query.cursor!r} is not a cursor of this listing; start again from the first page"
            )
        sql.add("(created_at, insert_order) < ({0}, {1})", moment.astimezone(UTC), order)
    return sql


async def _fetch_heads(conn: Any, query: RunQuery, limit: int, offset: int = 0) -> list[Any]:
    sql = _heads(query, cursor=True)
    return list(
        await conn.fetch(
            f"SELECT record, created_at, insert_order FROM avo_runs WHERE {sql.where}"
            f" ORDER BY created_at DESC, insert_order DESC LIMIT {int(limit)} OFFSET {int(offset)}",
            *sql.params,
        )
    )


async def _summaries(conn: Any, rows: list[Any]) -> list[tuple[Any, RunSummary]]:
    """Each head row with its run's facets (two queries for all of them)."""
    records = [decode_record(row["record"]) for row in rows]
    ids = [record.run_id for record in records]
    facets = {run_id: RunFacets() for run_id in ids}
    if ids:
        for event in await conn.fetch(
            "SELECT run_id, sequence, event_type, payload FROM avo_events"
            " WHERE run_id = ANY($1) AND event_type = ANY($2) ORDER BY run_id, sequence",
            ids,
            _FACET_TYPES,
        ):
            slim = _Slim(
                int(event["sequence"]), EventType(event["event_type"]), json.loads(event["payload"])
            )
            facets[event["run_id"]].apply(cast(AgentEvent, slim))
        for last in await conn.fetch(
            "SELECT run_id, max(sequence) AS last FROM avo_events"
            " WHERE run_id = ANY($1) GROUP BY run_id",
            ids,
        ):
            facets[last["run_id"]].last_sequence = int(last["last"])
    return [
        (row, RunSummary(record, facets[record.run_id]))
        for row, record in zip(rows, records, strict=True)
    ]


async def query_page(conn: Any, query: RunQuery) -> RunPage:
    """One page of ``query`` read on ``conn`` (an asyncpg connection)."""
    found: list[tuple[Any, RunSummary]] = []
    if not _needs_facets(query):
        found = await _summaries(conn, await _fetch_heads(conn, query, query.limit + 1))
    else:
        offset = 0
        while len(found) <= query.limit:
            batch = await _fetch_heads(conn, query, _BATCH, offset)
            if not batch:
                break
            offset += len(batch)
            found += [pair for pair in await _summaries(conn, batch) if query.matches(pair[1])]
    total = None
    if query.with_total and not _needs_facets(query):
        sql = _heads(query, cursor=False)
        count = f"SELECT count(*) FROM avo_runs WHERE {sql.where}"
        total = int(await conn.fetchval(count, *sql.params))
    page = found[: query.limit]
    cursor = None
    if len(found) > query.limit and page:
        row = page[-1][0]
        moment: datetime = row["created_at"]
        cursor = encode_cursor(moment, int(row["insert_order"]))
    return RunPage([summary for _, summary in page], total, cursor)


async def facet_sample(conn: Any) -> FacetValues:
    """The filterable values of the newest :data:`FACET_SAMPLE` runs."""
    rows = await _fetch_heads(conn, RunQuery(), FACET_SAMPLE)
    return facet_values([summary for _, summary in await _summaries(conn, rows)])


__all__ = ["FACET_SAMPLE", "facet_sample", "query_page"]
