"""The compare, sessions and plugins pages."""

from __future__ import annotations

import os
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from avo.exceptions import RunNotFoundError
from avo_ui import timeline
from avo_ui.app import _ui

Series = dict[str, list[tuple[int, float]]]


def _series(events: list[Any], prices: Any) -> tuple[Series, Series]:
    """Cumulative tokens and USD per model after each model call (for the compare charts)."""
    from avo.models import TokenUsage

    tokens: Series = {}
    costs: Series = {}
    for event in events:
        if event.event_type.value != "model_responded":
            continue
        payload = event.payload
        label = f"{payload.get('provider', '?')}/{payload.get('model', '?')}"
        usage = payload.get("usage") or {}
        used = int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
        so_far = tokens.setdefault(label, [])
        so_far.append((event.sequence, (so_far[-1][1] if so_far else 0) + used))
        try:
            priced = prices.cost(payload.get("provider"), payload.get("model"), TokenUsage(**usage))
        except (TypeError, ValueError):
            priced = None
        if priced is not None:
            spent = costs.setdefault(label, [])
            spent.append((event.sequence, (spent[-1][1] if spent else 0.0) + float(priced.total)))
    return tokens, costs


async def compare_page(request: Request) -> Response:
    ui = _ui(request)
    run_a = request.query_params.get("a", "").strip()
    run_b = request.query_params.get("b", "").strip()
    if not run_a or not run_b:
        return ui.render("compare_pick.html", request, a=run_a, b=run_b)
    from avo.ops.compare import compare_runs

    try:
        comparison = await compare_runs(ui.store, run_a, run_b)
    except RunNotFoundError as exc:
        raise HTTPException(404, f"{exc}; pick two runs from the runs list") from exc
    sides = []
    for run_id, mark in (
        (run_a, comparison.divergence and comparison.divergence.sequence_a),
        (run_b, comparison.divergence and comparison.divergence.sequence_b),
    ):
        run = await ui.store.get_run(run_id)
        events = await ui.store.get_events(run_id)
        tokens, costs = _series(events, ui.prices)
        sides.append(
            {
                "run": run,
                "tl": timeline.build(events, prices=ui.prices),
                "mark": mark,
                "tokens": tokens,
                "costs": costs,
                "last": max((e.sequence for e in events), default=1),
            }
        )
    return ui.render(
        "compare.html", request, cmp=comparison, sides=sides, diff_text=comparison.diff.to_text()
    )


async def sessions_page(request: Request) -> Response:
    ui = _ui(request)
    lister = getattr(ui.store, "list_sessions", None)
    sessions = await lister() if lister is not None else None
    if sessions is not None:
        sessions = sorted(sessions, key=lambda s: s.updated_at, reverse=True)[:200]
    return ui.render("sessions.html", request, sessions=sessions)


async def plugins_page(request: Request) -> Response:
    ui = _ui(request)
    from avo.plugins.manager import PluginManager
    from avo.plugins.status_cache import cached_status

    environ = ui.environ if ui.environ is not None else os.environ
    rows = cached_status(PluginManager(environ=environ), environ, refresh=True)
    rows = sorted(
        rows, key=lambda r: (r.get("status") == "ok", r.get("kind", ""), r.get("name", ""))
    )
    return ui.render("plugins.html", request, rows=rows)


__all__ = ["compare_page", "plugins_page", "sessions_page"]
