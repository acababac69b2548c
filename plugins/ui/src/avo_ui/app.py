"""The ASGI app: pages, the live stream, and the actions (see :func:`create_app`).

Every page reads the store when asked; nothing about a run is kept here but
the background tasks this server started (a resumed or new run it drives).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from avo.events import TERMINAL_EVENT_TYPES
from avo.exceptions import AvoError
from avo.ops.approval import open_requests
from avo.state import RunState, StopReason, is_terminal
from avo.storage import events_after
from avo.storage.queries import MAX_PAGE, RunQuery, query_runs, run_facet_values
from avo_ui import timeline
from avo_ui.security import Guard, GuardMiddleware

STATIC = Path(__file__).parent / "static"
POLL_SECONDS = 0.25
IDLE_POLLS = 40
"""After this many looks without a new event (10 s) the stream looks once a second."""
IDLE_POLL_SECONDS = 1.0
STREAM_ITEMS = 200
"""A run page with more timeline rows than this is streamed as it renders."""
FACETS_TTL = 60.0


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("avo_ui", "templates"), autoescape=select_autoescape(["html"])
    )
    env.filters["usd"] = timeline.usd
    return env


@dataclass
class UI:
    """What the handlers share: the store, the guard, where new runs work."""

    store: Any
    guard: Guard
    workspace: Path
    config: str | None = None
    environ: Mapping[str, str] | None = None
    tasks: dict[str, asyncio.Task[Any]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    refills: dict[str, tuple[str, str]] = field(default_factory=dict)  # refused forms, by key
    _facets: tuple[float, Any] | None = None
    _prices: Any = None
    _refresh: asyncio.Task[None] | None = None
    templates: Environment = field(default_factory=lambda: _environment())

    async def facet_values(self) -> Any:
        """The filter pickers' values, gathered at most once a minute (stale while refreshing)."""
        now = time.monotonic()
        if self._facets is None:
            self._facets = (now, await run_facet_values(self.store))
        elif now - self._facets[0] > FACETS_TTL and self._refresh is None:

            async def refresh() -> None:
                try:
                    self._facets = (time.monotonic(), await run_facet_values(self.store))
                finally:
                    self._refresh = None

            self._refresh = asyncio.get_running_loop().create_task(refresh())
        return self._facets[1]

    @property
    def prices(self) -> Any:
        """The price book ``avo cost`` uses: [pricing], flat rates, the plugins' catalogs."""
        if self._prices is None:
            from avo.plugins.manager import PluginManager
            from avo.pricing import price_book

            pricing: Any = None
            budget: Any = None
            try:
                from avo.compose.resolve import resolve_config

                resolved = resolve_config(self.config, environ=self.environ, cwd=self.workspace)
                config = resolved.config
                pricing, budget = config.pricing, config.budget
            except AvoError:
                pass  # no usable avo.toml here: the catalogs still price known models
            manager = PluginManager(environ=self.environ)
            self._prices = price_book(
                pricing=pricing, budget=budget, environ=self.environ, manager=manager
            )
        return self._prices

    def run_cost(self, summary: Any) -> Any:
        """USD of a listed run's tokens (None when none of its models has a price)."""
        from avo.models import TokenUsage

        total = None
        for entry in summary.facets.models.values():
            usage = TokenUsage(input_tokens=entry.input_tokens, output_tokens=entry.output_tokens)
            cost = self.prices.cost(entry.provider, entry.model, usage)
            if cost is not None:
                total = cost.total if total is None else total + cost.total
        return total

    def render(self, name: str, request: Request, status: int = 200, **values: Any) -> HTMLResponse:
        page = self.templates.get_template(name).render(
            csrf=self.guard.csrf_token, path=request.url.path, **values
        )
        return HTMLResponse(page, status)

    def stream(self, name: str, request: Request, **values: Any) -> Response:
        """A long page sent as it renders (the header reaches the browser before the rest)."""
        chunks = self.templates.get_template(name).generate(
            csrf=self.guard.csrf_token, path=request.url.path, **values
        )
        return StreamingResponse(_batched(chunks), media_type="text/html; charset=utf-8")


def _batched(chunks: Any, first: int = 8 * 1024, size: int = 64 * 1024) -> Any:
    """Jinja's many small chunks joined into writes: a small first one, then ``size`` each."""
    pending: list[str] = []
    length = 0
    limit = first
    for chunk in chunks:
        pending.append(chunk)
        length += len(chunk)
        if length >= limit:
            yield "".join(pending)
            pending, length, limit = [], 0, size
    if pending:
        yield "".join(pending)


def _ui(request: Request) -> UI:
    ui: UI = request.app.state.ui
    return ui


# ---------------------------------------------------------------------- runs list


def _day(value: str, name: str) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError as exc:
        raise HTTPException(400, f"{name}={value!r} is not a date; use YYYY-MM-DD") from exc


def _usd(value: str, name: str) -> Decimal | None:
    if not value:
        return None
    try:
        amount = Decimal(value)
    except InvalidOperation as exc:
        raise HTTPException(400, f"{name}={value!r} is not an amount; use USD like 0.25") from exc
    if not amount.is_finite() or amount < 0:
        raise HTTPException(400, f"{name}={value!r} is not an amount; use USD like 0.25")
    return amount


class _Rates(Mapping[tuple[str, str], tuple[Decimal, Decimal]]):
    """USD per 1k tokens of any (provider, model), looked up in the price book when asked."""

    def __init__(self, prices: Any) -> None:
        self.prices = prices
        self.seen: dict[tuple[str, str], tuple[Decimal, Decimal]] = {}

    def __getitem__(self, key: tuple[str, str]) -> tuple[Decimal, Decimal]:
        if key not in self.seen:
            found, _ = self.prices.lookup(*key)
            if found is None:
                raise KeyError(key)
            self.seen[key] = found.per_1k()
        return self.seen[key]

    def __iter__(self) -> Any:
        return iter(self.seen)

    def __len__(self) -> int:
        return len(self.seen)


def _query(
    request: Request, ui: UI, models: list[tuple[str, str]]
) -> tuple[RunQuery, dict[str, str]]:
    params = request.query_params
    keys = ("q", "state", "reason", "provider", "model", "tool", "session", "from", "to")
    shown = {k: params[k] for k in (*keys, "min_cost", "max_cost") if params.get(k)}
    try:
        states = tuple(RunState(s) for s in params.getlist("state") if s)
        reasons = tuple(StopReason(s) for s in params.getlist("reason") if s)
        limit = int(params.get("limit", "50"))
    except ValueError as exc:
        raise HTTPException(400, f"bad filter: {exc}; pick a value from the list") from exc
    until = _day(params.get("to", ""), "to")
    min_cost = _usd(params.get("min_cost", ""), "min_cost")
    max_cost = _usd(params.get("max_cost", ""), "max_cost")
    rates = _Rates(ui.prices) if min_cost is not None or max_cost is not None else {}
    query = RunQuery(
        text=params.get("q") or None,
        states=states,
        stop_reasons=reasons,
        provider=params.get("provider") or None,
        model=params.get("model") or None,
        tool=params.get("tool") or None,
        session_id=params.get("session") or None,
        created_after=_day(params.get("from", ""), "from"),
        created_before=until + timedelta(days=1) if until is not None else None,
        min_cost=min_cost,
        max_cost=max_cost,
        rates=rates,
        limit=max(1, min(limit, MAX_PAGE)),
        cursor=params.get("cursor") or None,
    )
    return query, shown


async def runs_page(request: Request) -> Response:
    ui = _ui(request)
    facets = await ui.facet_values()
    query, shown = _query(request, ui, facets.models)
    page = await query_runs(ui.store, query)
    next_link = None
    if page.next_cursor:
        next_link = "/?" + urlencode({**shown, "cursor": page.next_cursor})
    return ui.render(
        "runs.html",
        request,
        page=page,
        costs={row.run_id: ui.run_cost(row) for row in page.runs},
        shown=shown,
        facets=facets,
        states=[s.value for s in RunState],
        next_link=next_link,
        first_link=("/?" + urlencode(shown)) if query.cursor else None,
    )


# ---------------------------------------------------------------------- one run


async def _run_or_404(ui: UI, run_id: str) -> Any:
    run = await ui.store.get_run(run_id)
    if run is None:
        raise HTTPException(404, f"run {run_id} is not in this store; pick one from the runs list")
    return run


async def _activity(ui: UI, run: Any, open_calls: list[str]) -> str:
    """live (driven here or by another process), waiting for you, paused, interrupted, or final."""
    if run.run_id in ui.tasks and not ui.tasks[run.run_id].done():
        return "live"
    if run.state is RunState.PAUSED and open_calls:
        return "waiting for you"
    if is_terminal(run.state):
        return run.state.value
    from avo.ops import run_status

    return (await run_status(ui.store, run)).activity


async def run_page(request: Request) -> Response:
    ui = _ui(request)
    run_id = request.path_params["run_id"]
    run = await _run_or_404(ui, run_id)
    events = await ui.store.get_events(run_id)
    open_calls = [r.tool_call_id for r in open_requests(run_id, events)]
    show_all = request.query_params.get("all") == "1"
    built = timeline.build(events, open_calls, quiet=show_all, prices=ui.prices)
    call, given = ui.refills.get(request.query_params.get("refill", ""), ("", ""))
    if given and call:  # a refused form answer: its fields show what was typed
        from avo_ui.forms import refill

        for item in built.items:
            if item.form and item.call_id == call:
                item.form = refill(item.form, given)
    render = ui.stream if len(built.items) > STREAM_ITEMS else ui.render
    return render(
        "run.html",
        request,
        run=run,
        tl=built,
        activity=await _activity(ui, run, open_calls),
        terminal=is_terminal(run.state),
        error=ui.errors.get(run_id) or request.query_params.get("error"),
        paused=run.state is RunState.PAUSED,
        show_all=show_all,
    )


def _sse(event: str, data: str) -> str:
    lines = "".join(f"data: {line}\n" for line in data.splitlines() or [""])
    return f"event: {event}\n{lines}\n"


async def run_stream(request: Request) -> Response:
    """Server-sent events: each new timeline item as HTML and the run's state.

    A paused run stays followed (someone may answer it from the CLI); ``end``
    comes with the run's terminal event.
    """
    ui = _ui(request)
    run_id = request.path_params["run_id"]
    await _run_or_404(ui, run_id)
    try:
        after = int(request.query_params.get("after", "0"))
    except ValueError as exc:
        raise HTTPException(400, "after must be an event sequence number") from exc
    card = ui.templates.get_template("_item.html").module.card  # type: ignore[attr-defined]

    async def stream() -> AsyncIterator[str]:
        seen = after
        idle = 0
        yield "retry: 1000\n\n"
        while True:
            if await request.is_disconnected():
                return
            fresh = await events_after(ui.store, run_id, seen)  # only what is new
            if fresh:
                events = await ui.store.get_events(run_id)
                open_calls = [r.tool_call_id for r in open_requests(run_id, events)]
                builder = timeline.Builder(open_calls, prices=ui.prices)
                for event in events:
                    item = builder.add(event)
                    if event.sequence > seen and item is not None:
                        yield _sse("item", str(card(item, run_id, ui.guard.csrf_token)))
                seen = fresh[-1].sequence
                run = await ui.store.get_run(run_id)
                state = {
                    "state": run.state.value if run else "?",
                    "activity": await _activity(ui, run, open_calls) if run else "?",
                    "steps": run.steps if run else 0,
                    "tokens": run.token_usage.total_tokens if run else 0,
                    "last": seen,
                    "cost": timeline.usd(builder.timeline.cost),
                }
                yield _sse("state", json.dumps(state))
                if fresh[-1].event_type in TERMINAL_EVENT_TYPES:
                    yield _sse("end", json.dumps(state))
                    return
                idle = 0
            else:
                idle += 1
                yield ": keep-alive\n\n"
            # a quiet run (paused, waiting) is looked at less often: each look reads its log
            await asyncio.sleep(POLL_SECONDS if idle < IDLE_POLLS else IDLE_POLL_SECONDS)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def runs_status(request: Request) -> Response:
    """State, activity, steps and tokens of up to 100 runs (``?id=...&id=...``): live list rows."""
    ui = _ui(request)
    answer = {}
    for run_id in request.query_params.getlist("id")[:100]:
        run = await ui.store.get_run(run_id)
        if run is None:
            continue
        waiting = run.state is RunState.PAUSED and bool(
            open_requests(run_id, await ui.store.get_events(run_id))
        )
        answer[run_id] = {
            "state": run.state.value,
            "label": "waiting" if waiting else run.state.value,
            "terminal": is_terminal(run.state),
            "steps": run.steps,
            "tokens": run.token_usage.total_tokens,
        }
    return JSONResponse(answer)


async def event_raw(request: Request) -> Response:
    ui = _ui(request)
    run_id = request.path_params["run_id"]
    await _run_or_404(ui, run_id)
    sequence = request.path_params["sequence"]
    events = await ui.store.get_events(run_id)
    for event in events:
        if event.sequence == sequence:
            return JSONResponse(json.loads(event.model_dump_json()))
    raise HTTPException(404, f"run {run_id} has no event {sequence}")


async def events_raw(request: Request) -> Response:
    ui = _ui(request)
    run_id = request.path_params["run_id"]
    await _run_or_404(ui, run_id)
    events = await ui.store.get_events(run_id)
    return JSONResponse([json.loads(e.model_dump_json()) for e in events])


# ---------------------------------------------------------------------- errors


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if request.url.path.endswith((".json", "/stream")) or "/events/" in request.url.path:
        return PlainTextResponse(str(exc.detail), exc.status_code)
    return _ui(request).render(
        "error.html", request, exc.status_code, message=exc.detail, code=exc.status_code
    )


async def avo_error(request: Request, exc: Exception) -> Response:
    return _ui(request).render("error.html", request, 400, message=str(exc), code=400)


def create_app(
    store: Any,
    *,
    guard: Guard | None = None,
    workspace: str | Path | None = None,
    config: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Starlette:
    """The UI over ``store`` (any avo event store), guarded by ``guard`` (loopback, no token)."""
    from avo_ui import actions, pages

    ui = UI(
        store=store,
        guard=guard or Guard(),
        workspace=Path(workspace or Path.cwd()).resolve(),
        config=config,
        environ=environ,
    )
    routes = [
        Route("/", runs_page),
        Route("/runs", actions.start_run, methods=["POST"]),
        Route("/runs.json", runs_status),
        Route("/runs/{run_id}", run_page),
        Route("/runs/{run_id}/stream", run_stream),
        Route("/runs/{run_id}/events.json", events_raw),
        Route("/runs/{run_id}/events/{sequence:int}", event_raw),
        Route("/runs/{run_id}/{action}", actions.act, methods=["POST"]),
        Route("/compare", pages.compare_page),
        Route("/sessions", pages.sessions_page),
        Route("/plugins", pages.plugins_page),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error, AvoError: avo_error},
    )
    app.state.ui = ui
    app.add_middleware(GuardMiddleware, guard=ui.guard)
    return app


__all__ = ["UI", "Markup", "create_app"]
