"""Finding runs: filtered, paginated listings of a store's runs, and their facets.

Front ends (the web UI, ``avo runs list``) ask a store for one page of runs
matching a :class:`RunQuery`: a text search, states, stop reasons, a provider
or model, a tool the run called, a session, a creation date range and a cost
range. A store that offers :class:`RunQueryStore` answers in its own query
language; :func:`query_runs` falls back to reading every run otherwise, which is correct
but slow on a large store.

What a run is filtered on beyond its head (:class:`~avo.models.RunRecord`)
comes from its events, folded by :class:`RunFacets` — one definition every
store shares, so an index and a scan agree:

- ``session_id``: the session the run belongs to (``run_created``);
- ``provider``/``model``: the last model the run called (``model_responded``),
  or the one it was composed with when it has not called one yet;
- ``models``: tokens and calls per (provider, model);
- ``tools``: calls per tool name (``tool_requested``);
- ``waiting``: requests for a person not yet answered.

Cost is not stored (prices change and come from configuration): a query
passes ``rates`` — USD per 1,000 input and output tokens by (provider, model)
— and a run's cost is the sum over its models that have a rate. A run none of
whose tokens have a rate has no cost and never matches a cost filter.

Pages are newest first (creation time, then the order runs were stored) and
keyset-paginated: ``RunPage.next_cursor`` is an opaque string to pass back as
``RunQuery.cursor``, stable while new runs arrive.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol, runtime_checkable

from avo.events import AgentEvent, EventType
from avo.exceptions import StorageError
from avo.models import RunRecord
from avo.state import RunState, StopReason

MAX_PAGE = 500
"""The largest page a query may ask for."""

Rates = Mapping[tuple[str, str], tuple[Decimal, Decimal]]
"""USD per 1,000 (input, output) tokens by (provider, model)."""


@dataclass
class ModelTokens:
    """Calls and tokens of one (provider, model) in one run."""

    provider: str
    model: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class RunFacets:
    """What a run's events say beyond its head; :meth:`apply` folds one event in.

    Folding is incremental: an index keeps the facets of a run with the last
    sequence it applied and applies only the events after it.
    """

    session_id: str | None = None
    provider: str | None = None
    model: str | None = None
    models: dict[tuple[str, str], ModelTokens] = field(default_factory=dict)
    tools: dict[str, int] = field(default_factory=dict)
    waiting: int = 0
    open_requests: list[str] = field(default_factory=list)
    last_sequence: int = 0

    def apply(self, event: AgentEvent) -> None:
        """Fold ``event`` (events must come in ascending sequence)."""
        if event.sequence <= self.last_sequence:
            return
        self.last_sequence = event.sequence
        kind = event.event_type
        payload = event.payload
        if kind is EventType.MODEL_RESPONDED:
            provider = _text(payload.get("provider")) or self.provider or "?"
            model = _text(payload.get("model")) or self.model or "?"
            entry = self.models.get((provider, model))
            if entry is None:
                entry = self.models[(provider, model)] = ModelTokens(provider, model)
            entry.calls += 1
            usage = payload.get("usage")
            if isinstance(usage, Mapping):
                entry.input_tokens += _int(usage.get("input_tokens"))
                entry.output_tokens += _int(usage.get("output_tokens"))
            self.provider, self.model = provider, model
        elif kind is EventType.TOOL_REQUESTED:
            name = _text(payload.get("name"))
            if name:
                self.tools[name] = self.tools.get(name, 0) + 1
        elif kind is EventType.HUMAN_INPUT_REQUESTED:
            call_id = _text(payload.get("tool_call_id"))
            if call_id and call_id not in self.open_requests:
                self.open_requests.append(call_id)
        elif kind is EventType.HUMAN_INPUT_RECEIVED:
            call_id = _text(payload.get("tool_call_id"))
            if call_id in self.open_requests:
                self.open_requests.remove(call_id)
        elif kind is EventType.RUN_CREATED:
            self._created(payload)
        self.waiting = len(self.open_requests)

    def apply_all(self, events: Iterable[AgentEvent]) -> RunFacets:
        """Fold every event of ``events``; returns self."""
        for event in events:
            self.apply(event)
        return self

    def _created(self, payload: Mapping[str, Any]) -> None:
        session = payload.get("session")
        if isinstance(session, Mapping):
            self.session_id = _text(session.get("session_id"))
        record = payload.get("composition")
        config = record.get("config") if isinstance(record, Mapping) else None
        provider = config.get("provider") if isinstance(config, Mapping) else None
        if isinstance(provider, Mapping):
            self.provider = _text(provider.get("name"))
            settings = provider.get("settings")
            if isinstance(settings, Mapping):
                self.model = _text(settings.get("model"))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (:meth:`from_dict` reads it back): how indexes store facets."""
        return {
            "session_id": self.session_id,
            "provider": self.provider,
            "model": self.model,
            "models": [
                [m.provider, m.model, m.calls, m.input_tokens, m.output_tokens]
                for m in self.models.values()
            ],
            "tools": self.tools,
            "open_requests": self.open_requests,
            "last_sequence": self.last_sequence,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunFacets:
        """Facets saved with :meth:`to_dict`."""
        models = {
            (str(p), str(m)): ModelTokens(str(p), str(m), int(c), int(i), int(o))
            for p, m, c, i, o in data.get("models", [])
        }
        facets = cls(
            session_id=data.get("session_id"),
            provider=data.get("provider"),
            model=data.get("model"),
            models=models,
            tools={str(k): int(v) for k, v in dict(data.get("tools", {})).items()},
            open_requests=[str(c) for c in data.get("open_requests", [])],
            last_sequence=int(data.get("last_sequence", 0)),
        )
        facets.waiting = len(facets.open_requests)
        return facets


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def run_cost(facets: RunFacets, rates: Rates) -> Decimal | None:
    """USD of the run's priced tokens; None when none of its tokens have a rate."""
    total: Decimal | None = None
    for entry in facets.models.values():
        rate = rates.get((entry.provider, entry.model))
        if rate is None:
            continue
        cost = (entry.input_tokens * rate[0] + entry.output_tokens * rate[1]) / 1000
        total = cost if total is None else total + cost
    return total


@dataclass(frozen=True)
class RunSummary:
    """One row of a listing: the run head and its facets."""

    run: RunRecord
    facets: RunFacets

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.run.run_id

    def cost(self, rates: Rates) -> Decimal | None:
        """USD of the run's priced tokens (see :func:`run_cost`)."""
        return run_cost(self.facets, rates)


@dataclass(frozen=True)
class RunQuery:
    """Which runs to list, and which page.

    Every filter left at its default matches every run. ``text`` matches the
    task (case-insensitively, anywhere in it) or the start of the run id.
    ``created_after`` is inclusive, ``created_before`` exclusive. ``min_cost``
    and ``max_cost`` (inclusive, USD) need ``rates``.
    """

    text: str | None = None
    states: tuple[RunState, ...] = ()
    stop_reasons: tuple[StopReason, ...] = ()
    provider: str | None = None
    model: str | None = None
    tool: str | None = None
    session_id: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    min_cost: Decimal | None = None
    max_cost: Decimal | None = None
    rates: Rates = field(default_factory=dict)
    limit: int = 50
    cursor: str | None = None
    with_total: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise StorageError(f"a page holds 1 to {MAX_PAGE} runs, not {self.limit}")
        for moment in (self.created_after, self.created_before):
            if moment is not None and moment.tzinfo is None:
                raise StorageError(
                    f"date filters must be timezone-aware, got {moment.isoformat()}; "
                    "pass datetime(..., tzinfo=UTC)"
                )

    @property
    def text_needle(self) -> str | None:
        """The search text, trimmed and lower-cased (None when empty)."""
        needle = (self.text or "").strip().lower()
        return needle or None

    def matches(self, summary: RunSummary) -> bool:
        """Whether ``summary`` passes every filter (the reference every index follows)."""
        run, facets = summary.run, summary.facets
        needle = self.text_needle
        if (
            needle is not None
            and needle not in run.task.lower()
            and not run.run_id.lower().startswith(needle)
        ):
            return False
        if self.states and run.state not in self.states:
            return False
        if self.stop_reasons and run.stop_reason not in self.stop_reasons:
            return False
        pairs = facets.models.keys() or (
            [(facets.provider or "", facets.model or "")] if facets.provider else []
        )
        if self.provider is not None and all(p != self.provider for p, _ in pairs):
            return False
        if self.model is not None and all(m != self.model for _, m in pairs):
            return False
        if self.tool is not None and self.tool not in facets.tools:
            return False
        if self.session_id is not None and facets.session_id != self.session_id:
            return False
        if self.created_after is not None and run.created_at < self.created_after:
            return False
        if self.created_before is not None and run.created_at >= self.created_before:
            return False
        if self.min_cost is not None or self.max_cost is not None:
            cost = run_cost(facets, self.rates)
            if cost is None:
                return False
            if self.min_cost is not None and cost < self.min_cost:
                return False
            if self.max_cost is not None and cost > self.max_cost:
                return False
        return True

    def next_page(self, cursor: str | None) -> RunQuery:
        """The same query for the page at ``cursor``."""
        return replace(self, cursor=cursor)


@dataclass(frozen=True)
class RunPage:
    """One page of a listing: rows newest first, how many match in all, where next."""

    runs: list[RunSummary]
    total: int | None
    next_cursor: str | None


@dataclass(frozen=True)
class FacetValues:
    """The values a listing can be filtered on, as found in a store (for pickers)."""

    providers: list[str]
    models: list[tuple[str, str]]
    tools: list[str]
    stop_reasons: list[str]
    sessions: int = 0


@runtime_checkable
class RunQueryStore(Protocol):
    """A store that answers :class:`RunQuery` itself (optional capability).

    ``query_runs`` returns exactly the runs :meth:`RunQuery.matches` accepts,
    newest first (creation time, then store order), ``limit`` at a time;
    ``run_facet_values`` lists the providers, models, tools and stop reasons
    of the store's runs, exactly as the scanning fallback (:func:`page_of`) would.
    """

    async def query_runs(self, query: RunQuery) -> RunPage:
        """One page of the runs matching ``query``."""
        ...

    async def run_facet_values(self) -> FacetValues:
        """The filterable values found in the store."""
        ...


# ------------------------------------------------------------------ cursors


def encode_cursor(created_at: datetime, tiebreak: int | str) -> str:
    """An opaque cursor after the row (``created_at``, ``tiebreak``)."""
    raw = json.dumps([created_at.isoformat(), tiebreak], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, Any]:
    """The (created_at, tiebreak) of a cursor; StorageError for one no store made."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        moment, tiebreak = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return datetime.fromisoformat(moment), tiebreak
    except (ValueError, TypeError) as exc:
        raise StorageError(
            f"{cursor!r} is not a cursor of this listing; start again from the first page"
        ) from exc


# ------------------------------------------------------------------ the fallback


def facet_values(summaries: Iterable[RunSummary]) -> FacetValues:
    """The filterable values of ``summaries`` (sorted)."""
    providers: set[str] = set()
    models: set[tuple[str, str]] = set()
    tools: set[str] = set()
    reasons: set[str] = set()
    sessions: set[str] = set()
    for summary in summaries:
        facets = summary.facets
        for provider, model in facets.models:
            providers.add(provider)
            models.add((provider, model))
        if facets.provider:
            providers.add(facets.provider)
        tools.update(facets.tools)
        if summary.run.stop_reason is not None:
            reasons.add(summary.run.stop_reason.value)
        if facets.session_id:
            sessions.add(facets.session_id)
    return FacetValues(
        sorted(providers), sorted(models), sorted(tools), sorted(reasons), len(sessions)
    )


def page_of(summaries: Sequence[RunSummary], query: RunQuery) -> RunPage:
    """The page of ``summaries`` (newest first, in store order) that ``query`` asks for."""
    matching = [s for s in summaries if query.matches(s)]
    start = 0
    if query.cursor is not None:
        _, position = decode_cursor(query.cursor)
        if not isinstance(position, int) or position < 0:
            raise StorageError(
                f"{query.cursor!r} is not a cursor of this listing; start again from the first page"
            )
        start = position
    rows = matching[start : start + query.limit]
    end = start + len(rows)
    cursor = encode_cursor(rows[-1].run.created_at, end) if end < len(matching) else None
    return RunPage(rows, len(matching) if query.with_total else None, cursor)


async def scan_summaries(store: Any) -> list[RunSummary]:
    """Every run of ``store`` with its facets, newest first (reads every event)."""
    summaries = []
    for run in await store.list_runs():
        facets = RunFacets().apply_all(await store.get_events(run.run_id))
        summaries.append(RunSummary(run, facets))
    return summaries


async def query_runs(store: Any, query: RunQuery) -> RunPage:
    """One page of ``store``'s runs matching ``query`` (the store's index when it has one)."""
    if isinstance(store, RunQueryStore):
        return await store.query_runs(query)
    return page_of(await scan_summaries(store), query)


async def run_facet_values(store: Any) -> FacetValues:
    """The filterable values of ``store``'s runs (the store's index when it has one)."""
    if isinstance(store, RunQueryStore):
        return await store.run_facet_values()
    return facet_values(await scan_summaries(store))


async def run_summary(store: Any, run_id: str) -> RunSummary | None:
    """One run with its facets (None when it does not exist)."""
    run = await store.get_run(run_id)
    if run is None:
        return None
    return RunSummary(run, RunFacets().apply_all(await store.get_events(run_id)))


__all__ = [
    "MAX_PAGE",
    "FacetValues",
    "ModelTokens",
    "Rates",
    "RunFacets",
    "RunPage",
    "RunQuery",
    "RunQueryStore",
    "RunSummary",
    "decode_cursor",
    "encode_cursor",
    "facet_values",
    "page_of",
    "query_runs",
    "run_cost",
    "run_facet_values",
    "run_summary",
    "scan_summaries",
]
