"""Run listings for front ends: avo-sqlite's answer to ``avo.storage.queries.RunQuery``.

Head filters (text, states, stop reasons, creation dates) and the keyset
page run as one indexed SQL query on the ``runs`` table (newest first by
``created_at`` then ``run_key``, the order ``list_runs`` gives); the total is a
``COUNT(*)`` of the same filters. Only the rows of the page have their facets
folded from their events (model, tokens per model, tools, session, open
requests). Filters on facets (provider, model, tool, session, cost) scan the
head-filtered runs in order, folding each one's events, until the page is
full; their total is left unknown (None). No table is added: the events are
the only record of a run's facets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from typing import Any, cast

from avo.events import AgentEvent, EventType
from avo.exceptions import StorageError
from avo.models import RunRecord
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
from avo_sqlite._codec import decode_type, encode_type, key_range
from avo_sqlite._payloads import decode_payload

FACET_SAMPLE = 200
"""How many of the newest runs the filter pickers' values are gathered from."""
_BATCH = 200


def _needs_facets(query: RunQuery) -> bool:
    return any(
        value is not None for value in (query.provider, query.model, query.tool, query.session_id)
    ) or (query.min_cost is not None or query.max_cost is not None)


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _where(query: RunQuery) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    needle = query.text_needle
    if needle is not None:
        clauses.append(
            "(instr(lower(json_extract(record, '$.task')), ?) > 0"
            " OR lower(run_id) LIKE ? ESCAPE '\\')"
        )
        params += [needle, _like_prefix(needle)]
    if query.states:
        clauses.append(f"state IN ({', '.join('?' * len(query.states))})")
        params += [state.value for state in query.states]
    if query.stop_reasons:
        marks = ", ".join("?" * len(query.stop_reasons))
        clauses.append(f"json_extract(record, '$.stop_reason') IN ({marks})")
        params += [reason.value for reason in query.stop_reasons]
    if query.created_after is not None:
        clauses.append("created_at >= ?")
        params.append(query.created_after.astimezone(UTC).isoformat())
    if query.created_before is not None:
        clauses.append("created_at < ?")
        params.append(query.created_before.astimezone(UTC).isoformat())
    return clauses, params


def _after(cursor: str | None) -> tuple[list[str], list[Any]]:
    if cursor is None:
        return [], []
    moment, key = decode_cursor(cursor)
    if not isinstance(key, int):
        raise StorageError(
            f"{cursor!r} is not a cursor of this listing; start again from the first page"
        )
    stamp = moment.astimezone(UTC).isoformat()
    return ["(created_at < ? OR (created_at = ? AND run_key < ?))"], [stamp, stamp, key]


def _rows(core: Any, query: RunQuery, limit: int | None) -> Iterator[tuple[int, RunRecord]]:
    clauses, params = _where(query)
    after, more = _after(query.cursor)
    where = " AND ".join(clauses + after) or "1"
    sql = f"SELECT run_key, record FROM runs WHERE {where} ORDER BY created_at DESC, run_key DESC"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    for key, record in core.conn.execute(sql, [*params, *more]).fetchall():
        yield int(key), RunRecord.model_validate_json(record)


_FACET_TYPES = (
    EventType.RUN_CREATED,
    EventType.MODEL_RESPONDED,
    EventType.TOOL_REQUESTED,
    EventType.HUMAN_INPUT_REQUESTED,
    EventType.HUMAN_INPUT_RECEIVED,
)
_FACET_CODES = [encode_type(kind) for kind in _FACET_TYPES]
_FACET_SQL = (
    "SELECT event_key, event_type, payload FROM events WHERE event_key BETWEEN ? AND ?"
    f" AND event_type IN ({', '.join('?' * len(_FACET_CODES))}) ORDER BY event_key"
)


@dataclass
class _Slim:
    """What RunFacets reads of an event (building a full AgentEvent costs more)."""

    sequence: int
    event_type: EventType
    payload: dict[str, Any]


def _summary(core: Any, key: int, run: RunRecord) -> RunSummary:
    """The run with its facets, reading only the events facets are folded from."""
    low, high = key_range(key)
    facets = RunFacets()
    for event_key, stored_type, raw in core.conn.execute(
        _FACET_SQL, (low, high, *_FACET_CODES)
    ).fetchall():
        kind = decode_type(stored_type)
        slim = _Slim(int(event_key) - low, kind, decode_payload(kind, raw, run.run_id))
        facets.apply(cast(AgentEvent, slim))
    last = core.conn.execute(
        "SELECT MAX(event_key) FROM events WHERE event_key BETWEEN ? AND ?", (low, high)
    ).fetchone()[0]
    if last is not None:
        facets.last_sequence = int(last) - low
    return RunSummary(run, facets)


def query_page(core: Any, query: RunQuery) -> RunPage:
    """One page of ``query`` on ``core`` (an ``SQLiteCore``; call on its thread)."""
    with core._read("listing runs"):
        core._sync_runs()
        found: list[tuple[int, RunSummary]] = []
        if not _needs_facets(query):
            for key, run in _rows(core, query, query.limit + 1):
                found.append((key, RunSummary(run, RunFacets())))
        else:
            offset = 0
            while len(found) <= query.limit:
                batch = list(_rows_batch(core, query, offset))
                if not batch:
                    break
                offset += len(batch)
                for key, run in batch:
                    summary = _summary(core, key, run)
                    if query.matches(summary):
                        found.append((key, summary))
                        if len(found) > query.limit:
                            break
        total = None
        if query.with_total and not _needs_facets(query):
            clauses, params = _where(query)
            where = " AND ".join(clauses) or "1"
            total = int(
                core.conn.execute(f"SELECT COUNT(*) FROM runs WHERE {where}", params).fetchone()[0]
            )
        page = found[: query.limit]
        rows = [s if s.facets.last_sequence else _summary(core, k, s.run) for k, s in page]
    cursor = None
    if len(found) > query.limit and page:
        key, last = page[-1]
        cursor = encode_cursor(last.run.created_at, key)
    return RunPage(rows, total, cursor)


def _rows_batch(core: Any, query: RunQuery, offset: int) -> Iterator[tuple[int, RunRecord]]:
    clauses, params = _where(query)
    after, more = _after(query.cursor)
    where = " AND ".join(clauses + after) or "1"
    sql = (
        f"SELECT run_key, record FROM runs WHERE {where}"
        f" ORDER BY created_at DESC, run_key DESC LIMIT {_BATCH} OFFSET {int(offset)}"
    )
    for key, record in core.conn.execute(sql, [*params, *more]).fetchall():
        yield int(key), RunRecord.model_validate_json(record)


def facet_sample(core: Any) -> FacetValues:
    """The filterable values of the newest :data:`FACET_SAMPLE` runs."""
    with core._read("listing runs"):
        core._sync_runs()
        summaries = [_summary(core, k, run) for k, run in _rows(core, RunQuery(), FACET_SAMPLE)]
    return facet_values(summaries)


__all__ = ["FACET_SAMPLE", "facet_sample", "query_page"]
